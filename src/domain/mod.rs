//! The rules of the service, between the HTTP layer and the store.
//!
//! Handlers in `api` parse a request into plain values and call one function here;
//! write functions run inside the writer's transaction (`store::WriteTx`), read
//! functions on a snapshot (`store::ReadTx`). Nothing here knows about HTTP, and
//! nothing here touches a redb table directly.
//!
//! One folder per feature, in floors (a folder uses its own floor and those below;
//! `tests/architecture.rs` holds it): `conversation` (the flows of a conversation: a
//! message in, a possible opt-out's hold, a person's actions, unsubscribe links) on
//! top; `engagement` (enrolment in a cadence, the agenda, claims of due rows, the
//! gate's writes, outbound sends, the only place reactions run), `voice` (calls
//! through the voice provider, transfers, transcripts) and `import`; `contact` (policy
//! that reads: the compliance checks, quiet hours, keywords, revocation); and at the
//! bottom `records` (what a client writes and reads back: leads, subscriptions,
//! events, messages, calls, listings, the DNC list, webhook endpoints, recordings, API
//! keys, the bounds on stored values), `settings` (the organization's, its profiles
//! and their templates, the email and Twilio provider settings) and `people`.

pub mod contact;
pub mod conversation;
pub mod engagement;
pub mod import;
pub mod people;
pub mod records;
pub mod settings;
pub mod voice;

use crate::store::rows::Scope;

/// Who is asking: the organization every record of the request belongs to.
#[derive(Debug, Clone)]
pub struct Caller {
    pub org_id: String,
    pub key_id: String,
    pub scope: Scope,
}

impl Caller {
    /// The engine acting for `org` (a cadence step, the assistant's tools): the same
    /// domain functions as a request, with the organization's full rights.
    pub fn system(org: &str) -> Caller {
        Caller {
            org_id: org.to_string(),
            key_id: "engine".to_string(),
            scope: Scope::Admin,
        }
    }
}
