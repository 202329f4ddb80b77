//! Contact: whether and how a lead may be reached. The contact controls (`isAiOn`,
//! subscriptions, tags), messages the lead sends in, the compliance gate every outbound
//! attempt passes, the organization's quiet hours, and signed unsubscribe links.

pub mod compliance;
pub mod controls;
pub mod handling;
pub mod inbound;
pub mod keywords;
pub mod quiet_hours;
pub mod revocation;
pub mod unsubscribe_links;
