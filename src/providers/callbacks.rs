//! Every callback URL this server hands to a provider, built in one place under the
//! server's `public_url`: Twilio's message status callback, a call's voice webhooks
//! (`twiml`, `status`, `recording`, `relay`, `transfer`, `warm`) and its ConversationRelay
//! WebSocket, and the one-click unsubscribe link put in emails.
//!
//! The paths are the router's (`api::router`): a path changed here must change there.

/// A call's voice webhook, the last segment of its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallHook {
    Twiml,
    Status,
    Recording,
    Relay,
    Transfer,
    /// A warm transfer's steps (`?step=...&attempt=...`).
    Warm,
}

impl CallHook {
    pub fn as_str(self) -> &'static str {
        match self {
            CallHook::Twiml => "twiml",
            CallHook::Status => "status",
            CallHook::Recording => "recording",
            CallHook::Relay => "relay",
            CallHook::Transfer => "transfer",
            CallHook::Warm => "warm",
        }
    }
}

/// Twilio's status callback for the messages `org` sends.
pub fn sms_status(public_url: &str, org: &str) -> String {
    format!("{public_url}/v1/providers/twilio/{org}/sms-status")
}

/// The URL of call `call_id`'s voice webhook `hook`.
pub fn call(public_url: &str, org: &str, call_id: &str, hook: CallHook) -> String {
    let leaf = hook.as_str();
    format!("{public_url}/v1/providers/twilio/{org}/voice/{call_id}/{leaf}")
}

/// Call `call_id`'s transfer webhook when a person starts the transfer from the
/// console (no relay session ended to say so: the query does).
pub fn transfer_by_person(public_url: &str, org: &str, call_id: &str) -> String {
    let base = call(public_url, org, call_id, CallHook::Transfer);
    format!("{base}?reason=transfer")
}

/// A warm transfer's webhook of call `call_id`: `step` (`answer`, `digit`, `status`,
/// `conference`), for the person rung at `attempt` when it has one.
pub fn warm(public_url: &str, org: &str, call_id: &str, step: &str, attempt: Option<u8>) -> String {
    let base = call(public_url, org, call_id, CallHook::Warm);
    match attempt {
        Some(n) => format!("{base}?step={step}&attempt={n}"),
        None => format!("{base}?step={step}"),
    }
}

/// The relay's WebSocket URL: [`call`]'s `relay` with `wss` for `https` (`ws` for
/// `http`).
pub fn relay(public_url: &str, org: &str, call_id: &str) -> String {
    let base = if let Some(rest) = public_url.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = public_url.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        public_url.to_string()
    };
    call(&base, org, call_id, CallHook::Relay)
}

/// The one-click unsubscribe link carrying `token`.
pub fn unsubscribe(public_url: &str, token: &str) -> String {
    format!("{public_url}/v1/unsubscribe/{token}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_are_the_routers() {
        let base = "https://x.example";
        assert_eq!(
            sms_status(base, "o"),
            "https://x.example/v1/providers/twilio/o/sms-status"
        );
        assert_eq!(
            call(base, "o", "c", CallHook::Twiml),
            "https://x.example/v1/providers/twilio/o/voice/c/twiml"
        );
        assert_eq!(
            relay(base, "o", "c"),
            "wss://x.example/v1/providers/twilio/o/voice/c/relay"
        );
        assert_eq!(
            relay("http://h:1", "o", "c"),
            "ws://h:1/v1/providers/twilio/o/voice/c/relay"
        );
        assert_eq!(unsubscribe(base, "t"), "https://x.example/v1/unsubscribe/t");
    }
}
