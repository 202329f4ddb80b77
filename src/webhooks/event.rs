//! The webhook events: one enum and one list, declared together.
//!
//! Endpoints subscribe by wire name, deliveries store it, the OpenAPI document lists it.
//! The `webhook_events!` list below is the only place an event is named, so a new
//! variant is at once in [`WebhookEvent::ALL`] (what endpoints may subscribe to) and in
//! every `match` the compiler then asks to be completed.

/// Declares [`WebhookEvent`], its wire names and [`WebhookEvent::ALL`] from one list.
macro_rules! webhook_events {
    ($($variant:ident => $name:literal),* $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum WebhookEvent {
            $($variant),*
        }

        impl WebhookEvent {
            /// Every event, in the order the interface lists them.
            pub const ALL: &'static [WebhookEvent] = &[$(WebhookEvent::$variant),*];

            /// The wire name (`call.completed`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(WebhookEvent::$variant => $name),*
                }
            }
        }
    };
}

webhook_events! {
    CallCompleted => "call.completed",
    CallDispositioned => "call.dispositioned",
    CallTransferConnected => "call.transfer.connected",
    CallTransferFailed => "call.transfer.failed",
    LeadOptedOut => "lead.opted_out",
    LeadHandoff => "lead.handoff",
    LeadConsentChanged => "lead.consent_changed",
    MeetingBooked => "meeting.booked",
    MeetingRescheduled => "meeting.rescheduled",
    MeetingCanceled => "meeting.canceled",
}

impl WebhookEvent {
    pub fn parse(name: &str) -> Option<WebhookEvent> {
        WebhookEvent::ALL
            .iter()
            .copied()
            .find(|e| e.as_str() == name)
    }
}

impl std::fmt::Display for WebhookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_parses_back_from_its_wire_name() {
        for &event in WebhookEvent::ALL {
            assert_eq!(WebhookEvent::parse(event.as_str()), Some(event));
        }
        assert_eq!(WebhookEvent::parse("lead.unknown"), None);
    }

    #[test]
    fn the_openapi_document_describes_exactly_these_events() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../openapi/openapi.json")).unwrap();
        let mut documented: Vec<&str> = doc["webhooks"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut declared: Vec<&str> = WebhookEvent::ALL.iter().map(|e| e.as_str()).collect();
        documented.sort_unstable();
        declared.sort_unstable();
        assert_eq!(documented, declared);
    }
}
