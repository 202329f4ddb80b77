//! Settings: what an organization configures. Its own settings (compliance, quiet hours,
//! the engine's members), its profiles (cadences, reply delay, dispositions) with the
//! template engine their texts use, and the email and Twilio provider kinds.

pub mod email;
pub mod org;
pub mod profiles;
pub mod twilio;
