//! The test kit: what the unit tests, `tests/` and `benches/` share, compiled only for
//! them (`cfg(test)` here, the `testkit` feature for the other targets, which a
//! dev-dependency of the package on itself turns on). Nothing in the service uses it.
//!
//! - [`server`]: [`TestServer`], a real server on a loopback port over HTTPS, in a
//!   temporary data directory, with a client trusting its certificate; [`Org`], one
//!   with organization `acme` and a key of each scope.
//! - [`https`]: that client, HTTP/1.1, HTTP/2 or both, any body, and a plain one.
//! - [`twilio`]: [`FakeTwilio`], Twilio's Messages, Calls and Recordings resources.
//! - [`model`]: [`FakeModel`], a scripted OpenAI-compatible chat-completions server.
//! - [`smtp`]: [`SmtpSink`], an SMTP server keeping every message, plain or TLS.
//! - [`webhooks`]: [`WebhookReceiver`], a scriptable webhook receiver.
//! - [`compliance`]: [`FakeCompliance`], an organization's compliance service.
//! - [`poll`](mod@poll): waiting until something happens, within a bound.
//! - [`logs`]: [`Captured`], what the server logs.
//! - [`serve`](mod@serve): the loopback HTTP/1.1 server under the fakes.
//! - [`webchat`](mod@webchat): a website visitor's web chat requests and stream.
//! - [`relay`]: [`RelayClient`], Twilio's side of a ConversationRelay WebSocket.
//! - [`fixtures`]: request bodies many tests start from (an always-open calendar).
//! - [`seaweed`]: [`seaweed::SeaweedFs`], a real S3-compatible object store for the
//!   replication tests.
//! - [`caldav`]: [`Radicale`], a real CalDAV server, and a server that is not one;
//!   [`xandikos`]: a second one, and [`xandikos::CalDavServer`] for tests run on both.

pub mod browser;
pub mod caldav;
pub mod compliance;
pub mod console;
pub mod fixtures;
pub mod https;
pub mod logs;
pub mod model;
pub mod poll;
pub mod relay;
pub mod seaweed;
pub mod serve;
pub mod server;
pub mod smtp;
pub mod twilio;
pub mod twilio_voice;
pub mod webchat;
pub mod webhooks;
pub mod xandikos;

pub use caldav::Radicale;
pub use compliance::FakeCompliance;
pub use https::{client_trusting, https_client, tls_trusting, HttpsClient, Versions};
pub use logs::Captured;
pub use model::{FakeModel, Step};
pub use poll::{poll, WAIT};
pub use relay::RelayClient;
pub use serve::closed_addr;
pub use server::{enc, Org, Response, TestServer};
pub use smtp::{SinkTls, SmtpSink, TestCa};
pub use twilio::FakeTwilio;
pub use webhooks::{Reply, WebhookReceiver};
