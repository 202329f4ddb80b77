//! "Needs attention": the one rule saying why a lead needs a person now. Its reasons,
//! their words, and the window after which a failed send no longer counts.
//!
//! It sits on the leaf floor so that the store can apply it where the answer is kept:
//! the lead index derives a lead's `attn` facets with [`Attention::of`] in the write
//! that changes the lead (computed once per write), and the inbox and the notifier read
//! those facets instead of computing them again. The rule takes [`Signals`], plain facts
//! the store reads off a lead's records, so it names no stored type. A reason that ends
//! with time alone ([`Attention::expires`]) is repaired by the notifier's tick
//! (`engine::notices`), never by a page view.

use crate::time::Micros;

/// How long a failed send keeps a lead in "Needs attention": 7 days.
pub const FAILED_SEND_WINDOW: Micros = 7 * 24 * 3600 * 1_000_000;

/// The facts about a lead the rule looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// The assistant handed the lead off to a person (and nobody handed it back).
    pub handed_off: bool,
    /// A person replied since the hand-off.
    pub handoff_answered: bool,
    /// The lead's last message is its own, unanswered.
    pub awaiting_reply: bool,
    /// The assistant is on for the lead.
    pub ai_on: bool,
    /// The organization has an assistant connected (a model in Settings → Assistant):
    /// without one, nothing answers a lead whose assistant is "on".
    pub assistant_connected: bool,
    /// When the newest failed (or unknown) send ended so, until retried or dismissed.
    pub failed_send_at: Option<Micros>,
    /// The lead's engagement has a `lastError`.
    pub assistant_error: bool,
    /// A possible opt-out holds the lead until a person decides.
    pub possible_opt_out: bool,
    /// The newest message to the lead was a meeting's confirmation or reminder.
    pub meeting_message: bool,
    /// The start of the lead's next booked meeting.
    pub next_meeting_at: Option<Micros>,
    /// The owner moved or canceled one of the lead's meetings in their calendar and no
    /// person has replied to the lead or marked it seen since.
    pub calendar_changed: bool,
    /// A transfer nobody took left the lead to be called back by a person.
    pub call_back: bool,
}

/// Why a lead needs a person now ("Needs attention").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attention {
    /// The assistant handed the lead off and no person has replied since.
    HandedOff,
    /// The lead's last message is unanswered while the assistant is off for it.
    Waiting,
    /// A send of the last 7 days ended `failed` or `unknown` (not retried or dismissed).
    SendFailed,
    /// The engagement has a `lastError`.
    AssistantError,
    /// A possible opt-out holds the lead: "Opt out" or "Not an opt-out".
    PossibleOptOut,
    /// The lead answered a meeting's confirmation or reminder while the assistant is off
    /// for it, and the meeting is still ahead: until a person replies or it passes.
    MeetingReply,
    /// The lead's last message is unanswered, the assistant is on for it, but the
    /// organization has no assistant connected: nothing will answer but a person.
    NoAssistant,
    /// The owner moved or canceled one of the lead's meetings in their own calendar:
    /// the lead was told; a person checks that it suits them (until a reply or "Seen").
    CalendarChanged,
    /// The lead asked for a person on a call, nobody took the transfer and no assistant
    /// took the call back: a person calls them back (until a reply or "Called back").
    CallBack,
}

impl Attention {
    pub const ALL: [Attention; 9] = [
        Attention::HandedOff,
        Attention::Waiting,
        Attention::SendFailed,
        Attention::AssistantError,
        Attention::PossibleOptOut,
        Attention::MeetingReply,
        Attention::NoAssistant,
        Attention::CalendarChanged,
        Attention::CallBack,
    ];

    /// The reason's name (its facet is `attn:<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Attention::HandedOff => "handed_off",
            Attention::Waiting => "waiting",
            Attention::SendFailed => "send_failed",
            Attention::AssistantError => "error",
            Attention::PossibleOptOut => "possible_opt_out",
            Attention::MeetingReply => "meeting_reply",
            Attention::NoAssistant => "no_assistant",
            Attention::CalendarChanged => "calendar_changed",
            Attention::CallBack => "call_back",
        }
    }

    /// The reason in words, as the inbox and the notification email show it.
    pub fn words(self) -> &'static str {
        match self {
            Attention::HandedOff => "Handed off",
            Attention::Waiting => "Waiting for a reply",
            Attention::SendFailed => "Send failed",
            Attention::AssistantError => "Assistant error",
            Attention::PossibleOptOut => "Possible opt-out",
            Attention::MeetingReply => "Meeting reply",
            Attention::NoAssistant => "Replied — no assistant connected",
            Attention::CalendarChanged => "Meeting changed in the calendar",
            Attention::CallBack => "Call back",
        }
    }

    /// Whether the reason can end with time alone, without a write (a failed send
    /// older than [`FAILED_SEND_WINDOW`], a meeting reply whose meeting has passed): the
    /// notifier's tick looks for those.
    pub fn expires(self) -> bool {
        matches!(self, Attention::SendFailed | Attention::MeetingReply)
    }

    /// Whether the reason holds for a lead with `signals` at `now`.
    pub fn holds(self, signals: &Signals, now: Micros) -> bool {
        match self {
            Attention::HandedOff => signals.handed_off && !signals.handoff_answered,
            // A reply to a meeting's message is the more precise reason.
            Attention::Waiting => {
                signals.awaiting_reply
                    && !signals.ai_on
                    && !Attention::MeetingReply.holds(signals, now)
            }
            Attention::SendFailed => signals
                .failed_send_at
                .is_some_and(|at| now - at < FAILED_SEND_WINDOW),
            Attention::AssistantError => signals.assistant_error,
            Attention::PossibleOptOut => signals.possible_opt_out,
            Attention::MeetingReply => {
                signals.meeting_message
                    && signals.awaiting_reply
                    && !signals.ai_on
                    && signals.next_meeting_at.is_some_and(|at| at > now)
            }
            // A possible opt-out and a hand-off are the more precise reasons.
            Attention::NoAssistant => {
                signals.awaiting_reply
                    && signals.ai_on
                    && !signals.assistant_connected
                    && !signals.possible_opt_out
                    && !Attention::HandedOff.holds(signals, now)
            }
            Attention::CalendarChanged => signals.calendar_changed,
            Attention::CallBack => signals.call_back,
        }
    }

    /// Why a lead with `signals` needs a person at `now` (empty: it does not).
    pub fn of(signals: &Signals, now: Micros) -> Vec<Attention> {
        Attention::ALL
            .into_iter()
            .filter(|reason| reason.holds(signals, now))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Micros = 1_800_000_000_000_000;

    #[test]
    fn a_lead_with_nothing_to_answer_needs_nobody() {
        assert!(Attention::of(&Signals::default(), NOW).is_empty());
        let assisted = Signals {
            awaiting_reply: true,
            ai_on: true,
            assistant_connected: true,
            ..Signals::default()
        };
        assert!(Attention::of(&assisted, NOW).is_empty());
    }

    #[test]
    fn each_reason_holds_on_its_own_facts() {
        let handed_off = Signals {
            handed_off: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&handed_off, NOW), [Attention::HandedOff]);
        let answered = Signals {
            handoff_answered: true,
            ..handed_off
        };
        assert!(Attention::of(&answered, NOW).is_empty());
        let waiting = Signals {
            awaiting_reply: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&waiting, NOW), [Attention::Waiting]);
        let failed = Signals {
            failed_send_at: Some(NOW - 1),
            ..Signals::default()
        };
        assert_eq!(Attention::of(&failed, NOW), [Attention::SendFailed]);
        let error = Signals {
            assistant_error: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&error, NOW), [Attention::AssistantError]);
        let held = Signals {
            possible_opt_out: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&held, NOW), [Attention::PossibleOptOut]);
        let meeting = Signals {
            awaiting_reply: true,
            meeting_message: true,
            next_meeting_at: Some(NOW + 1),
            ..Signals::default()
        };
        assert_eq!(Attention::of(&meeting, NOW), [Attention::MeetingReply]);
        let changed = Signals {
            calendar_changed: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&changed, NOW), [Attention::CalendarChanged]);
        let passed = Signals {
            next_meeting_at: Some(NOW),
            ..meeting
        };
        assert_eq!(Attention::of(&passed, NOW), [Attention::Waiting]);
        let assisted = Signals {
            ai_on: true,
            assistant_connected: true,
            ..meeting
        };
        assert!(Attention::of(&assisted, NOW).is_empty());
        let all = Signals {
            handed_off: true,
            awaiting_reply: true,
            failed_send_at: Some(NOW),
            assistant_error: true,
            possible_opt_out: true,
            calendar_changed: true,
            call_back: true,
            ..Signals::default()
        };
        let mut all_but_meeting = Attention::ALL.to_vec();
        all_but_meeting.retain(|r| *r != Attention::MeetingReply && *r != Attention::NoAssistant);
        assert_eq!(Attention::of(&all, NOW), all_but_meeting);
    }

    #[test]
    fn a_failed_send_counts_for_seven_days_then_expires() {
        let at = NOW - FAILED_SEND_WINDOW;
        let failed = Signals {
            failed_send_at: Some(at),
            ..Signals::default()
        };
        assert!(Attention::SendFailed.holds(&failed, at));
        assert!(Attention::SendFailed.holds(&failed, NOW - 1));
        assert!(!Attention::SendFailed.holds(&failed, NOW));
        assert!(Attention::of(&failed, NOW + 1).is_empty());
        let expiring: Vec<Attention> = Attention::ALL.into_iter().filter(|r| r.expires()).collect();
        assert_eq!(expiring, [Attention::SendFailed, Attention::MeetingReply]);
    }

    #[test]
    fn every_reason_has_its_own_name_and_words() {
        let names: std::collections::BTreeSet<_> =
            Attention::ALL.iter().map(|r| r.name()).collect();
        let words: std::collections::BTreeSet<_> =
            Attention::ALL.iter().map(|r| r.words()).collect();
        assert_eq!(
            (names.len(), words.len()),
            (Attention::ALL.len(), Attention::ALL.len())
        );
    }

    #[test]
    fn a_reply_nothing_automated_answers_waits_for_a_person() {
        let unanswered = Signals {
            awaiting_reply: true,
            ai_on: true,
            ..Signals::default()
        };
        assert_eq!(Attention::of(&unanswered, NOW), [Attention::NoAssistant]);
        let connected = Signals {
            assistant_connected: true,
            ..unanswered
        };
        assert!(Attention::of(&connected, NOW).is_empty());
        let held = Signals {
            possible_opt_out: true,
            ..unanswered
        };
        assert_eq!(Attention::of(&held, NOW), [Attention::PossibleOptOut]);
        let answered = Signals {
            awaiting_reply: false,
            ..unanswered
        };
        assert!(Attention::of(&answered, NOW).is_empty());
    }
}
