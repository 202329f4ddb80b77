//! The lead index's facets, typed: every filter value, tab, reason, search term and
//! campaign number the index keeps a row (or a count) for, and the one place that
//! spells them, both as index keys ([`Facet::key`]) and, for the yes/no filters and
//! the campaign rates, by their wire and URL names ([`Flag::param`], [`Rate::wire`]).
//!
//! The keys are stored (`lead_facets`, `lead_facet_counts`, `lead_facet_list`): a
//! changed spelling, or a new facet every lead should have, is a migration that
//! rebuilds the index (ARCHITECTURE.md, "A lead filter").

use super::rows::{EngagementState, StopReason};
use crate::attention::Attention;

/// Facets whose key starts with this are counted, never listed: a campaign's numbers
/// have a count row and no row per lead.
pub const COUNTED_ONLY: &str = "#";
/// The prefix of search terms among the facets' keys.
pub const TERM: &str = "t:";

/// The yes/no filters of the lead search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flag {
    Replied,
    Hot,
    Qualified,
    HandedOff,
    AiOn,
    Unsubscribed,
}

impl Flag {
    pub const ALL: [Flag; 6] = [
        Flag::Replied,
        Flag::Hot,
        Flag::Qualified,
        Flag::HandedOff,
        Flag::AiOn,
        Flag::Unsubscribed,
    ];

    /// The filter's parameter name, in the API's query and the console's URL.
    pub fn param(self) -> &'static str {
        match self {
            Flag::Replied => "replied",
            Flag::Hot => "hot",
            Flag::Qualified => "qualified",
            Flag::HandedOff => "handedOff",
            Flag::AiOn => "aiOn",
            Flag::Unsubscribed => "unsubscribed",
        }
    }

    /// The filter named `param` in a query, if one is.
    pub fn from_param(param: &str) -> Option<Flag> {
        Flag::ALL.into_iter().find(|f| f.param() == param)
    }

    /// The filter's name in the index's keys (`<name>:1`, `<name>:0`).
    fn key(self) -> &'static str {
        match self {
            Flag::Replied => "replied",
            Flag::Hot => "hot",
            Flag::Qualified => "qualified",
            Flag::HandedOff => "handedoff",
            Flag::AiOn => "aion",
            Flag::Unsubscribed => "unsub",
        }
    }
}

/// A campaign's rates: the share of its leads that did something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rate {
    Replied,
    Hot,
    Qualified,
    /// Handed off by the assistant, or stopped for a hand-off.
    HandedOff,
    /// Unsubscribed from a channel, or stopped for it.
    OptedOut,
}

impl Rate {
    pub const ALL: [Rate; 5] = [
        Rate::Replied,
        Rate::Hot,
        Rate::Qualified,
        Rate::HandedOff,
        Rate::OptedOut,
    ];

    /// Its name in a campaign's numbers (`GET /v1/profiles/{name}/stats`) and its key.
    pub fn wire(self) -> &'static str {
        match self {
            Rate::Replied => "replied",
            Rate::Hot => "hot",
            Rate::Qualified => "qualified",
            Rate::HandedOff => "handedOff",
            Rate::OptedOut => "optedOut",
        }
    }
}

/// A campaign's (a profile's) number by lead, kept as a counted-only facet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Enrolled,
    State(EngagementState),
    Stop(StopReason),
    Rate(Rate),
}

/// One facet of a live lead: a filter value, a tab of the inbox, a reason it needs
/// attention, a search term or a campaign's number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facet {
    /// Every live lead has it: its count is the number of live leads.
    All,
    Profile(String),
    /// The engagement's state (`none` without a profile).
    State(EngagementState),
    /// Why a stopped engagement stopped.
    Stop(StopReason),
    /// A yes/no filter and its value.
    Flag(Flag, bool),
    /// A tag's id.
    Tag(String),
    /// The leads a user owns.
    Owner(String),
    /// Leads with a conversation (a message, an email or a call).
    Conversation,
    /// Leads that need a person, whatever the reason.
    NeedsAttention,
    /// Leads that need a person for this reason.
    Attention(Attention),
    /// Leads the assistant is handling (on, owned by nobody, and a cadence running or a
    /// conversation).
    Assisted,
    /// Leads with a conversation that also have the inner facet: the inbox's tabs
    /// ("Needs attention", "Mine", "Assistant") count and list conversations only.
    Conversing(Box<Facet>),
    /// A search term (lower case, cut to 64 characters); as a prefix, the words it
    /// starts.
    Term(String),
    /// A campaign's number (counted only, no row per lead).
    Campaign {
        profile: String,
        metric: Metric,
    },
}

impl Facet {
    /// The facet as the index's tables key it.
    pub fn key(&self) -> String {
        match self {
            Facet::All => "all".to_string(),
            Facet::Profile(name) => format!("profile:{name}"),
            Facet::State(state) => format!("state:{}", state.as_str()),
            Facet::Stop(reason) => format!("stop:{}", reason.as_str()),
            Facet::Flag(flag, on) => format!("{}:{}", flag.key(), if *on { 1 } else { 0 }),
            Facet::Tag(id) => format!("tag:{id}"),
            Facet::Owner(user) => format!("owner:{user}"),
            Facet::Conversation => "conv:1".to_string(),
            Facet::NeedsAttention => "attn".to_string(),
            Facet::Attention(reason) => format!("attn:{}", reason.name()),
            Facet::Assisted => "assisted".to_string(),
            Facet::Conversing(inner) => format!("conv|{}", inner.key()),
            Facet::Term(word) => format!("{TERM}{word}"),
            Facet::Campaign { profile, metric } => {
                let metric = match metric {
                    Metric::Enrolled => "enrolled".to_string(),
                    Metric::State(state) => format!("state:{}", state.as_str()),
                    Metric::Stop(reason) => format!("stop:{}", reason.as_str()),
                    Metric::Rate(rate) => rate.wire().to_string(),
                };
                format!("{COUNTED_ONLY}c:{profile}|{metric}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_spelling_the_index_was_built_with() {
        let cases = [
            (Facet::All, "all"),
            (Facet::Profile("solar".into()), "profile:solar"),
            (Facet::State(EngagementState::None), "state:none"),
            (Facet::Stop(StopReason::Replied), "stop:replied"),
            (Facet::Flag(Flag::HandedOff, true), "handedoff:1"),
            (Facet::Flag(Flag::AiOn, false), "aion:0"),
            (Facet::Flag(Flag::Unsubscribed, true), "unsub:1"),
            (Facet::Tag("vip".into()), "tag:vip"),
            (Facet::Owner("usr_1".into()), "owner:usr_1"),
            (Facet::Conversation, "conv:1"),
            (Facet::NeedsAttention, "attn"),
            (Facet::Attention(Attention::SendFailed), "attn:send_failed"),
            (Facet::Assisted, "assisted"),
            (
                Facet::Conversing(Box::new(Facet::Owner("usr_1".into()))),
                "conv|owner:usr_1",
            ),
            (Facet::Term("ana".into()), "t:ana"),
            (
                Facet::Campaign {
                    profile: "solar".into(),
                    metric: Metric::Rate(Rate::HandedOff),
                },
                "#c:solar|handedOff",
            ),
        ];
        for (facet, key) in cases {
            assert_eq!(facet.key(), key);
        }
    }

    #[test]
    fn a_flag_is_found_by_its_parameter_only() {
        for flag in Flag::ALL {
            assert_eq!(Flag::from_param(flag.param()), Some(flag));
        }
        assert_eq!(Flag::from_param("handedoff"), None);
        assert_eq!(Flag::from_param("aion"), None);
    }
}
