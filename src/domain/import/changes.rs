//! What an import row did to the lead it matched: each field whose value the row's write
//! really changed, from and to, named as the API's lead JSON names it (`firstName`,
//! `phone`, `tags`, `additionalInfo.<key>`). The report lists the first
//! [`LISTED_MATCHES`] matched rows this way and counts them all.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::domain::records::leads::LeadText;
use crate::store::rows::LeadRecord;

/// Matched rows an import's report lists (all are counted).
pub const LISTED_MATCHES: usize = 1000;

/// A lead field an import can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangedField {
    Text(LeadText),
    Tags,
    /// A key of `additionalInfo`.
    Info(String),
}

impl ChangedField {
    /// The field's name in the API's lead JSON (`additionalInfo.<key>` for a key).
    pub fn wire(&self) -> String {
        match self {
            ChangedField::Text(field) => field.wire().to_string(),
            ChangedField::Tags => "tags".into(),
            ChangedField::Info(key) => format!("additionalInfo.{key}"),
        }
    }
}

/// One field's change: its value before and after (`null`: absent or empty).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub field: ChangedField,
    pub from: Value,
    pub to: Value,
}

/// A row that matched a live lead (or an earlier row of the file): its number, the
/// lead, and what it changed (nothing when its matches were skipped).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    pub row: u64,
    pub lead_id: String,
    /// The lead's name as a person reads it (its email or phone without one).
    #[serde(skip)]
    pub name: String,
    #[serde(serialize_with = "changes_map")]
    pub changes: Vec<FieldChange>,
}

/// `{"<field>": {"from", "to"}}`, in the order of the lead's fields.
fn changes_map<S: Serializer>(changes: &[FieldChange], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct FromTo<'a> {
        from: &'a Value,
        to: &'a Value,
    }
    let mut map = s.serialize_map(Some(changes.len()))?;
    for change in changes {
        let value = FromTo {
            from: &change.from,
            to: &change.to,
        };
        map.serialize_entry(&change.field.wire(), &value)?;
    }
    map.end()
}

/// The fields whose values differ between `old` and `new`: the text fields, then the
/// tags (by name), then the keys of `additionalInfo`.
pub fn diff(old: &LeadRecord, new: &LeadRecord) -> Vec<FieldChange> {
    let text = |s: &str| {
        if s.is_empty() {
            Value::Null
        } else {
            Value::String(s.to_string())
        }
    };
    let mut out = Vec::new();
    for field in LeadText::ALL {
        let (from, to) = (field.of(old), field.of(new));
        if from != to {
            out.push(FieldChange {
                field: ChangedField::Text(field),
                from: text(from),
                to: text(to),
            });
        }
    }
    let ids = |lead: &LeadRecord| lead.tags.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    if ids(old) != ids(new) {
        let names = |lead: &LeadRecord| {
            Value::Array(
                lead.tags
                    .iter()
                    .map(|t| Value::String(t.name.clone()))
                    .collect(),
            )
        };
        out.push(FieldChange {
            field: ChangedField::Tags,
            from: names(old),
            to: names(new),
        });
    }
    let empty = serde_json::Map::new();
    let before = old.additional_info.0.as_object().unwrap_or(&empty);
    let after = new.additional_info.0.as_object().unwrap_or(&empty);
    let keys = before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)));
    for key in keys {
        let from = before.get(key).cloned().unwrap_or(Value::Null);
        let to = after.get(key).cloned().unwrap_or(Value::Null);
        if from != to {
            out.push(FieldChange {
                field: ChangedField::Info(key.clone()),
                from,
                to,
            });
        }
    }
    out
}

/// A lead's name as a person reads it: first and last name, else its email, phone or id.
pub fn display_name(lead: &LeadRecord) -> String {
    let name = format!("{} {}", lead.first_name, lead.last_name);
    if !name.trim().is_empty() {
        return name.trim().to_string();
    }
    [&lead.email, &lead.phone, &lead.id]
        .into_iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::{JsonBlob, TagRecord};

    #[test]
    fn only_changed_fields_are_listed_by_their_wire_names() {
        let old = LeadRecord {
            first_name: "Maria".into(),
            email: "m@x.example".into(),
            additional_info: JsonBlob(serde_json::json!({"Roof": "Tile", "Bill": 120})),
            ..LeadRecord::default()
        };
        let mut new = old.clone();
        new.first_name = "Mia".into();
        new.additional_info =
            JsonBlob(serde_json::json!({"Roof": "Metal", "Bill": 120, "Notes": "x"}));
        new.tags.push(TagRecord {
            id: "vip".into(),
            name: "VIP".into(),
            condition: String::new(),
        });
        let changes = diff(&old, &new);
        let m = Match {
            row: 12,
            lead_id: "lead-1".into(),
            name: display_name(&old),
            changes,
        };
        assert_eq!(m.name, "Maria");
        assert_eq!(
            serde_json::to_value(&m).unwrap_or_default(),
            serde_json::json!({"row": 12, "leadId": "lead-1", "changes": {
                "firstName": {"from": "Maria", "to": "Mia"},
                "tags": {"from": [], "to": ["VIP"]},
                "additionalInfo.Roof": {"from": "Tile", "to": "Metal"},
                "additionalInfo.Notes": {"from": null, "to": "x"},
            }})
        );
    }
}
