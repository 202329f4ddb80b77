//! Black-box tests: real HTTPS requests against the real server on an ephemeral port.
//! One test binary (modules below) keeps link time down on small machines. The server,
//! its client and the fakes of the outside world are the test kit's (`engaged::testkit`);
//! the helper modules here hold the requests and checks the test modules share.

mod answers;
mod engagement;
mod requests;
mod twilio_signing;

mod assistant;
mod auth;
mod booking;
mod caldav;
mod calendar_sync;
mod calls;
mod campaigns;
mod compliance;
mod consent;
mod console;
mod console_meetings;
mod contact;
mod dnc;
mod edge;
mod email;
mod engine;
mod errors;
mod events;
mod first_run;
mod fixture;
mod hold;
mod import;
mod import_choices;
mod inbox;
mod lead_actions;
mod leads;
mod limits;
mod listing;
mod meetings;
mod messages;
mod notices;
mod ops;
mod outbound;
mod policy;
mod profiles;
mod recordings;
mod reminders;
mod replays;
mod revocation;
mod search;
mod settings;
mod signin;
mod sync;
mod transport;
mod twilio;
mod voice;
mod webchat;
mod webchat_voice;
mod webhooks;
