//! The rules of the service, between the HTTP layer and the store.
//!
//! Handlers in `api` parse a request into plain values and call one function here;
//! write functions run inside the writer's transaction (`store::WriteTx`), read
//! functions on a snapshot (`store::ReadTx`). Nothing here knows about HTTP, and
//! nothing here touches a redb table directly.

pub mod agenda;
pub mod auth;
pub mod calls;
pub mod compliance;
pub mod contact;
pub mod dnc;
pub mod email_settings;
pub mod engagement;
pub mod events;
pub mod leads;
pub mod limits;
pub mod listing;
pub mod messages;
pub mod org_settings;
pub mod outbound;
pub mod profiles;
pub mod recording_upload;
pub mod recordings;
pub mod transcript;
pub mod transfer;
pub mod twilio_settings;
pub mod unsubscribe_links;
pub mod voice;
pub mod webhook_endpoints;

use crate::store::records::Scope;

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
