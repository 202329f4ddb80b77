//! Conversation: the flows of a conversation with a lead, each one write job that
//! reads contact's policy, composes the records' writes and reacts once: a message the
//! lead sends in (`inbound`), the hold of a possible opt-out (`hold`), what a person
//! does on the lead's page (`handling`, and its bulk form `bulk_enrolment`), and the
//! signed unsubscribe links (`unsubscribe_links`).
//!
//! Architecture Invariant: the top of the domain. Nothing else in `domain` imports
//! it; it uses engagement, voice, contact, records, settings and people below.

pub mod bulk_enrolment;
pub mod handling;
pub mod hold;
pub mod inbound;
pub mod unsubscribe_links;
pub mod webchat;
