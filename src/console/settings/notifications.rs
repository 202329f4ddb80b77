//! The settings page's "Notifications" section: the notification emails the
//! organization's people were sent.

use maud::{html, Markup};

use crate::console::notifications::{notification_list, NOTIFICATIONS_SHOWN};
use crate::error::Result;
use crate::store::rows::NotificationRecord;
use crate::store::ReadTx;

/// What the section shows: the latest notifications sent, times in the zone.
pub(super) struct NotificationsSectionView {
    sent: Vec<NotificationRecord>,
    zone: String,
}

impl NotificationsSectionView {
    pub(super) fn of(read: &ReadTx, org_id: &str, zone: &str) -> Result<NotificationsSectionView> {
        Ok(NotificationsSectionView {
            sent: read.notifications(org_id, NOTIFICATIONS_SHOWN)?,
            zone: zone.to_string(),
        })
    }

    pub(super) fn view(&self) -> Markup {
        html! {
            section.panel #notifications aria-labelledby="notifications-heading" {
                h2 #notifications-heading { "Notifications" }
                (notification_list(&self.sent, &self.zone))
            }
        }
    }
}
