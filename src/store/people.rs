//! Typed access to the console's people: users, their email index, sessions.

use redb::ReadableTable;

use super::codec::encode;
use super::read::ReadTx;
use super::reader::Reader;
use super::rows::{email_key, SessionRecord, SetupTokenRecord, UserRecord};
use super::tables::*;
use super::write::WriteTx;
use crate::error::Result;

impl WriteTx<'_> {
    /// Writes a user and moves its email's index row.
    pub fn put_user(&mut self, user: &UserRecord, old: Option<&UserRecord>) -> Result<()> {
        self.open_write(USERS)?
            .insert(user.id.as_str(), encode(user)?.as_slice())?;
        let new_key = email_key(&user.email);
        let old_key = old.map(|o| email_key(&o.email));
        if old_key.as_deref() != Some(new_key.as_str()) {
            let mut index = self.open_write(USERS_BY_EMAIL)?;
            if let Some(old_key) = old_key {
                index.remove(old_key.as_str())?;
            }
            index.insert(new_key.as_str(), user.id.as_str())?;
        }
        Ok(())
    }

    pub fn put_session(&mut self, hash: &[u8; 32], session: &SessionRecord) -> Result<()> {
        self.open_write(SESSIONS)?
            .insert(&hash[..], encode(session)?.as_slice())?;
        self.open_write(SESSIONS_BY_USER)?
            .insert((session.user_id.as_str(), &hash[..]), ())?;
        Ok(())
    }

    pub fn remove_session(&mut self, hash: &[u8; 32]) -> Result<()> {
        let Some(session) = self.session(hash)? else {
            return Ok(());
        };
        self.open_write(SESSIONS)?.remove(&hash[..])?;
        self.sessions_ended = true;
        self.open_write(SESSIONS_BY_USER)?
            .remove((session.user_id.as_str(), &hash[..]))?;
        Ok(())
    }

    /// Stores the first run's setup token, replacing any earlier one.
    pub fn put_setup_token(&mut self, token: &SetupTokenRecord) -> Result<()> {
        self.open_write(META)?
            .insert(SETUP_TOKEN, encode(token)?.as_slice())?;
        Ok(())
    }

    /// Removes the first run's setup token (used, or no longer needed).
    pub fn remove_setup_token(&mut self) -> Result<()> {
        if self.setup_token()?.is_some() {
            self.open_write(META)?.remove(SETUP_TOKEN)?;
        }
        Ok(())
    }

    /// Whether the server has any user at all (the first run has none).
    pub fn any_user(&self) -> Result<bool> {
        Ok(self.open_read(USERS)?.first()?.is_some())
    }

    /// The token hashes of a user's sessions.
    pub fn user_sessions(&self, user_id: &str) -> Result<Vec<[u8; 32]>> {
        let table = self.open_read(SESSIONS_BY_USER)?;
        let mut out = Vec::new();
        for row in table.range((user_id, &[][..])..)? {
            let (key, _) = row?;
            let (user, hash) = key.value();
            if user != user_id {
                break;
            }
            if let Ok(hash) = <[u8; 32]>::try_from(hash) {
                out.push(hash);
            }
        }
        Ok(out)
    }
}

impl ReadTx {
    /// Whether the server has any user at all (the first run has none).
    pub fn any_user(&self) -> Result<bool> {
        Ok(self.open_read(USERS)?.first()?.is_some())
    }

    /// Every user, or one organization's, by email.
    pub fn users(&self, org: Option<&str>) -> Result<Vec<UserRecord>> {
        let table = self.open_read(USERS)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (_, value) = row?;
            let user: UserRecord = super::codec::decode(value.value())?;
            if org.is_none_or(|o| o == user.org_id) {
                out.push(user);
            }
        }
        out.sort_by_key(|a| email_key(&a.email));
        Ok(out)
    }
}
