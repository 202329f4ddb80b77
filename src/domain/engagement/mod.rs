//! Engagement: the work engaged does on its own for a lead. Enrolment in a profile's
//! cadence and its stop rules, the claims that turn a due agenda row into a send or a
//! call (at most once), and outbound messages through a provider.

pub mod add_to_campaign;
pub mod agenda;
pub mod campaigns;
pub mod claims;
pub mod enrolment;
pub mod gate;
pub mod outbound;
pub mod reactions;
pub mod reminders;
pub mod waiting;
