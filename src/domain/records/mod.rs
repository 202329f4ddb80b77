//! Records: what a client writes and reads back through the interface, each with its
//! rules: leads, their events and messages, calls, the listings (filters and cursors),
//! the DNC list, tags made from a name, webhook endpoints, recordings and their
//! uploads, API keys, and the bounds every stored value keeps to.

pub mod auth;
pub mod calls;
pub mod consent;
pub mod conversation;
pub mod dnc;
pub mod events;
pub mod leads;
pub mod limits;
pub mod listing;
pub mod meeting_sync;
pub mod meetings;
pub mod message_shape;
pub mod messages;
pub mod recording_upload;
pub mod recordings;
pub mod search;
pub mod subscriptions;
pub mod tags;
pub mod webhook_endpoints;
pub mod written;
