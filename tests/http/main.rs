//! Black-box tests: real HTTPS requests against the real server on an ephemeral port.
//! One test binary (modules below) keeps link time down on small machines.

mod common;
mod util;

mod assistant;
mod auth;
mod calls;
mod compliance;
mod contact;
mod dnc;
mod edge;
mod email;
mod engine;
mod errors;
mod events;
mod fake_model;
mod fake_twilio;
mod fixture;
mod leads;
mod limits;
mod listing;
mod messages;
mod ops;
mod profiles;
mod recordings;
mod relay_client;
mod smtp_sink;
mod sync;
mod transport;
mod twilio;
mod voice;
mod webhooks;
