//! A submitted form (`application/x-www-form-urlencoded`), read within a size bound by
//! the API's body reader, at the API's pace (`api::request`).

use crate::api::request::{read_body, RequestBody};
use crate::error::{Error, Result};

/// The most a console form may carry: a reply's text is bounded far below this.
pub const MAX_FORM_BYTES: usize = 256 * 1024;

/// A form's fields, in order; a name may repeat.
#[derive(Debug, Clone, Default)]
pub struct Form(Vec<(String, String)>);

impl Form {
    /// The first value of `name`, when present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (checkboxes of one name), in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name`, trimmed; empty when absent.
    pub fn text(&self, name: &str) -> &str {
        self.get(name).unwrap_or_default().trim()
    }

    /// Every field, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// A form of these fields (a multipart form's, read one by one).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Form {
        Form(pairs)
    }

    pub fn parse(bytes: &[u8]) -> Result<Form> {
        serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
            .map(Form)
            .map_err(|_| Error::BadRequest("The form could not be read".into()))
    }
}

/// Reads a request's form body: at most [`MAX_FORM_BYTES`] (413 beyond), at the
/// configured body pace (408 behind it).
pub async fn read(body: RequestBody) -> Result<Form> {
    Form::parse(&read_body(body, MAX_FORM_BYTES).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_keeps_repeated_names_and_decodes_values() {
        let form = Form::parse(b"csrf=abc&message=Hi+there%21&tag=a&tag=b").unwrap();
        assert_eq!(form.get("message"), Some("Hi there!"));
        assert_eq!(form.get("tag"), Some("a"));
        assert_eq!(form.text("missing"), "");
    }
}
