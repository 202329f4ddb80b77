//! Call screeners: the services that answer a call for the person called and ask the
//! caller who they are (Google's Call Screen, Apple's Call Screening and Live
//! Voicemail, Samsung's Bixby text call, carriers' screeners). On an outbound call the
//! relay reads the lead's first turns with [`is_screener`]; on a match the call is
//! `hitCallScreening`, the screener hears the profile's `screeningReply` once (by
//! default [`DEFAULT_REPLY`]), and a turn that is not a screener's afterwards is the
//! person: `reachedHumanAfterScreening`.
//!
//! A phrase matches in a turn folded to lower-case ASCII letters, digits and single
//! spaces, so punctuation, case and curly apostrophes do not matter. The list holds
//! what the screeners say in their own words, as their makers publish them and as
//! recordings of them read; each phrase is specific to a screener, so a person's
//! "who is this?" or "why are you calling?" is never one.

use std::time::{Duration, Instant};

/// How many of an outbound call's first lead turns are read for a screener.
pub const TURNS_READ: usize = 2;

/// Seconds of silence after the reply to a screener that end the call (nobody came).
pub const SILENCE_SECONDS: u64 = 20;

/// What the screener hears when the profile sets no `screeningReply`.
pub const DEFAULT_REPLY: &str =
    "Hi, this is {{business.name}} calling for {{firstName}}, following up on their request.";

/// Phrases only a screener says (folded as [`fold`] does).
const PHRASES: &[&str] = &[
    // Google's Call Screen (Pixel): "Hi, the person you're calling is using a screening
    // service from Google, and will get a copy of this conversation. Go ahead and say your
    // name, and why you're calling."
    "using a screening service",
    "screening service from google",
    "will get a copy of this conversation",
    "go ahead and say your name",
    "say your name and why youre calling",
    // Apple's Call Screening (iOS 26): "Hi, if you record your name and reason for
    // calling, I'll see if this person is available."
    "record your name and reason for calling",
    "see if this person is available",
    // Apple's Live Voicemail prompt and carriers' screeners.
    "please state your name and the reason for your call",
    "please state your name and reason for calling",
    "state your name and why youre calling",
    "please say your name and the reason for your call",
    "the person youre calling is using",
    "the person you are calling is using",
    "call screening service",
    "this call is being screened",
    // Samsung's Bixby text call: "Hi, I'm Bixby, the assistant of the person you're
    // calling. Please tell me your name and why you're calling."
    "the assistant of the person youre calling",
    "tell me your name and why youre calling",
    // What a screener says while the person decides.
    "please stay on the line",
    "trying to connect you",
    "will be with you shortly",
];

/// Where an outbound call stands with a call screener; the relay gives it each of the
/// lead's turns ([`Screening::hear`]) and ends the call when its silence passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screening {
    state: State,
    /// After the reply to a screener: when its silence ends the call.
    silence_until: Option<Instant>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The lead's first turns are read for a screener: this many more.
    Watching(usize),
    /// A screener heard the reply: the next turn that is not a screener's is the person.
    Screened,
    /// Nothing more to watch.
    Done,
}

/// What a lead's turn was, for the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// A screener answered: it hears the reply, once, without the model.
    Screener,
    /// The screener again ("please stay on the line"): recorded, not answered.
    ScreenerAgain,
    /// The first turn of a person after the screener: `reachedHumanAfterScreening`.
    Person,
    /// A turn like any: the assistant answers it.
    Turn,
}

impl Screening {
    /// `watch`: an outbound call to a lead, whose first turns are read.
    pub fn new(watch: bool) -> Screening {
        Screening {
            state: if watch {
                State::Watching(TURNS_READ)
            } else {
                State::Done
            },
            silence_until: None,
        }
    }

    /// Reads the lead's turn `said`, heard at `now`.
    pub fn hear(&mut self, said: &str, now: Instant) -> Heard {
        if self.state == State::Done {
            return Heard::Turn;
        }
        let screener = is_screener(said);
        let silence = now + Duration::from_secs(SILENCE_SECONDS);
        match (self.state, screener) {
            (State::Watching(_), true) => {
                self.state = State::Screened;
                self.silence_until = Some(silence);
                Heard::Screener
            }
            (State::Screened, true) => {
                self.silence_until = Some(silence);
                Heard::ScreenerAgain
            }
            (State::Screened, false) => {
                self.done();
                Heard::Person
            }
            (State::Watching(left), false) => {
                self.state = if left > 1 {
                    State::Watching(left - 1)
                } else {
                    State::Done
                };
                Heard::Turn
            }
            (State::Done, _) => Heard::Turn,
        }
    }

    /// When the silence after the reply to a screener ends the call, if it is running.
    pub fn silence_until(&self) -> Option<Instant> {
        self.silence_until
    }

    /// Whether a screener heard the reply and no person has spoken since: at the
    /// call's end (or its silence), `reachedHumanAfterScreening` is false.
    pub fn waiting_for_person(&self) -> bool {
        self.state == State::Screened
    }

    /// Nothing more to watch (the call ends, or a person came).
    pub fn done(&mut self) {
        self.state = State::Done;
        self.silence_until = None;
    }
}

/// Whether `said` (a lead's turn) is a call screener speaking.
pub fn is_screener(said: &str) -> bool {
    let folded = fold(said);
    PHRASES.iter().any(|phrase| folded.contains(phrase))
}

/// Lower-case ASCII letters and digits with single spaces between words; apostrophes
/// (straight or curly) dropped, so "you're" is "youre".
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if matches!(c, '\'' | '\u{2019}' | '\u{2018}') {
            continue;
        }
        if c.is_ascii_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c.to_ascii_lowercase());
        } else {
            space = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screeners_are_recognised_in_their_own_words() {
        for screener in [
            "Hi, the person you're calling is using a screening service from Google, and will get a copy of this conversation. Go ahead and say your name, and why you're calling.",
            "Hi, if you record your name and reason for calling, I'll see if this person is available.",
            "Please state your name and the reason for your call.",
            "The person you are calling is using a call screening service.",
            "Hi, I’m Bixby, the assistant of the person you’re calling. Please tell me your name and why you’re calling.",
            "Thanks, please stay on the line.",
            "GO AHEAD AND SAY YOUR NAME",
        ] {
            assert!(is_screener(screener), "{screener}");
        }
    }

    #[test]
    fn people_are_not_screeners() {
        for person in [
            "Hello?",
            "Who is this?",
            "Why are you calling?",
            "Yes, this is Ada speaking.",
            "I'm screening my calls these days, what do you want?",
            "Can you call back later, I'm driving.",
            "What's your name again?",
            "Sure, tell me more about the panels.",
            "Stay on the line, let me grab a pen.",
        ] {
            assert!(!is_screener(person), "{person}");
        }
    }

    #[test]
    fn a_screener_then_a_person_is_reached_and_only_the_first_turns_are_read() {
        let now = Instant::now();
        let mut s = Screening::new(true);
        assert_eq!(
            s.hear("Please state your name and the reason for your call.", now),
            Heard::Screener
        );
        assert!(s.waiting_for_person());
        assert_eq!(
            s.silence_until(),
            Some(now + Duration::from_secs(SILENCE_SECONDS))
        );
        assert_eq!(
            s.hear("Please stay on the line.", now),
            Heard::ScreenerAgain
        );
        assert_eq!(s.hear("Hello? This is Ada.", now), Heard::Person);
        assert!(!s.waiting_for_person() && s.silence_until().is_none());
        assert_eq!(
            s.hear("Please stay on the line.", now),
            Heard::Turn,
            "done watching"
        );

        // A person first: after TURNS_READ turns nothing is read any more.
        let mut s = Screening::new(true);
        for _ in 0..TURNS_READ {
            assert_eq!(s.hear("Hello?", now), Heard::Turn);
        }
        assert_eq!(
            s.hear("Please state your name and the reason for your call.", now),
            Heard::Turn
        );
        // An inbound call is never watched.
        let mut s = Screening::new(false);
        assert_eq!(
            s.hear("Please state your name and the reason for your call.", now),
            Heard::Turn
        );
    }

    #[test]
    fn folding_drops_punctuation_case_and_apostrophes() {
        assert_eq!(
            fold("  You’re  CALLING, aren't you?! "),
            "youre calling arent you"
        );
    }
}
