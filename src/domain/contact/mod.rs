//! Contact: whether and how a lead may be reached. The contact controls (`isAiOn`,
//! subscriptions, tags), messages the lead sends in, the compliance gate every outbound
//! attempt passes, the organization's quiet hours, signed unsubscribe links, and the
//! hold of a possible opt-out.

pub mod compliance;
pub mod controls;
pub mod handling;
pub mod hold;
pub mod inbound;
pub mod keywords;
pub mod quiet_hours;
pub mod revocation;
pub mod unsubscribe_links;
