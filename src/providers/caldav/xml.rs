//! The WebDAV XML of the CalDAV client, written and read with `quick-xml`: the
//! `calendar-query` REPORT's body (RFC 4791 7.8: a time range over `VEVENT`s, the
//! server asked to `expand` recurrences), the `PROPFIND` of a collection's
//! `resourcetype`, and the `207 Multi-Status` answer read into each response's `href`,
//! status, `calendar-data` and whether it names a calendar collection.

use chrono::{DateTime, Utc};
use quick_xml::events::{BytesDecl, BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::writer::Writer;
use quick_xml::NsReader;

const DAV: &[u8] = b"DAV:";
const CALDAV: &[u8] = b"urn:ietf:params:xml:ns:caldav";

/// The time format of CalDAV's `time-range` and `expand` (`20260105T150000Z`).
fn caldav_time(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%SZ").to_string()
}

/// The `calendar-query` REPORT's body over `[from, to)`.
pub fn calendar_query(from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<u8> {
    let (start, end) = (caldav_time(from), caldav_time(to));
    let mut writer = Writer::new(Vec::new());
    // Writing into a Vec cannot fail; an error would only leave the body short, which
    // the server refuses.
    let _ = write_query(&mut writer, &start, &end);
    writer.into_inner()
}

fn write_query(writer: &mut Writer<Vec<u8>>, start: &str, end: &str) -> std::io::Result<()> {
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("utf-8"), None)))?;
    writer
        .create_element("C:calendar-query")
        .with_attribute(("xmlns:D", "DAV:"))
        .with_attribute(("xmlns:C", "urn:ietf:params:xml:ns:caldav"))
        .write_inner_content(|w| {
            w.create_element("D:prop").write_inner_content(|w| {
                w.create_element("D:getetag").write_empty()?;
                w.create_element("C:calendar-data")
                    .write_inner_content(|w| {
                        w.create_element("C:expand")
                            .with_attribute(("start", start))
                            .with_attribute(("end", end))
                            .write_empty()?;
                        Ok(())
                    })?;
                Ok(())
            })?;
            w.create_element("C:filter").write_inner_content(|w| {
                w.create_element("C:comp-filter")
                    .with_attribute(("name", "VCALENDAR"))
                    .write_inner_content(|w| {
                        w.create_element("C:comp-filter")
                            .with_attribute(("name", "VEVENT"))
                            .write_inner_content(|w| {
                                w.create_element("C:time-range")
                                    .with_attribute(("start", start))
                                    .with_attribute(("end", end))
                                    .write_empty()?;
                                Ok(())
                            })?;
                        Ok(())
                    })?;
                Ok(())
            })?;
            Ok(())
        })?;
    Ok(())
}

/// The `PROPFIND` (Depth: 0) body asking a collection's `resourcetype`.
pub fn propfind_resourcetype() -> Vec<u8> {
    let mut writer = Writer::new(Vec::new());
    let _ = (|| -> std::io::Result<()> {
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("utf-8"), None)))?;
        writer
            .create_element("D:propfind")
            .with_attribute(("xmlns:D", "DAV:"))
            .write_inner_content(|w| {
                w.create_element("D:prop").write_inner_content(|w| {
                    w.create_element("D:resourcetype").write_empty()?;
                    Ok(())
                })?;
                Ok(())
            })?;
        Ok(())
    })();
    writer.into_inner()
}

/// One `response` of a multistatus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DavResponse {
    pub href: String,
    /// The response's or its propstat's status code (`HTTP/1.1 200 OK` → 200).
    pub status: Option<u16>,
    pub calendar_data: Option<String>,
    /// Its `resourcetype` holds CalDAV's `calendar`.
    pub is_calendar: bool,
}

/// Why an answer is not a multistatus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotMultistatus {
    /// Not well-formed XML.
    NotXml(String),
    /// XML, but its root is not DAV's `multistatus`.
    OtherRoot(String),
}

/// Which element a text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    Multistatus,
    Response,
    Href,
    Status,
    CalendarData,
    ResourceType,
    Calendar,
    Other,
}

fn element(ns: &ResolveResult, local: &[u8]) -> Element {
    let dav = matches!(ns, ResolveResult::Bound(n) if n.as_ref() == DAV);
    let caldav = matches!(ns, ResolveResult::Bound(n) if n.as_ref() == CALDAV);
    match local {
        b"multistatus" if dav => Element::Multistatus,
        b"response" if dav => Element::Response,
        b"href" if dav => Element::Href,
        b"status" if dav => Element::Status,
        b"resourcetype" if dav => Element::ResourceType,
        b"calendar-data" if caldav => Element::CalendarData,
        b"calendar" if caldav => Element::Calendar,
        _ => Element::Other,
    }
}

/// Reads a `207 Multi-Status` body into its responses.
pub fn multistatus(body: &[u8]) -> Result<Vec<DavResponse>, NotMultistatus> {
    let mut reader = NsReader::from_reader(body);
    let mut buf = Vec::new();
    let mut stack: Vec<Element> = Vec::new();
    let mut responses = Vec::new();
    let mut current: Option<DavResponse> = None;
    let mut text = String::new();
    let mut saw_root = false;
    let bad = |e: &dyn std::fmt::Display| NotMultistatus::NotXml(e.to_string());
    loop {
        let (ns, event) = reader
            .read_resolved_event_into(&mut buf)
            .map_err(|e| bad(&e))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                let kind = element(&ns, e.local_name().as_ref());
                if !saw_root {
                    saw_root = true;
                    if kind != Element::Multistatus {
                        return Err(NotMultistatus::OtherRoot(name_of(e)));
                    }
                }
                match kind {
                    Element::Response => current = Some(DavResponse::default()),
                    Element::Calendar if stack.last() == Some(&Element::ResourceType) => {
                        if let Some(r) = current.as_mut() {
                            r.is_calendar = true;
                        }
                    }
                    _ => {}
                }
                text.clear();
                if !is_empty {
                    stack.push(kind);
                }
            }
            Event::End(_) => {
                let kind = stack.pop();
                let parent = stack.last().copied();
                if let Some(r) = current.as_mut() {
                    match kind {
                        Some(Element::Href) if parent == Some(Element::Response) => {
                            r.href = text.trim().to_string();
                        }
                        // A propstat's status after the response's own: the first kept.
                        Some(Element::Status) if r.status.is_none() => {
                            r.status = status_code(&text);
                        }
                        Some(Element::CalendarData) => {
                            r.calendar_data = Some(std::mem::take(&mut text));
                        }
                        _ => {}
                    }
                }
                if kind == Some(Element::Response) {
                    responses.extend(current.take());
                }
                text.clear();
            }
            Event::Text(ref e) => text.push_str(&e.xml10_content().map_err(|e| bad(&e))?),
            Event::CData(ref e) => text.push_str(&e.decode().map_err(|e| bad(&e))?),
            Event::GeneralRef(ref e) => {
                let c = match e.resolve_char_ref().map_err(|e| bad(&e))? {
                    Some(c) => c,
                    None => match e.decode().map_err(|e| bad(&e))?.as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => return Err(bad(&format!("unknown entity &{other};"))),
                    },
                };
                text.push(c);
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
        }
        buf.clear();
    }
    if !saw_root {
        return Err(NotMultistatus::NotXml("no XML element".into()));
    }
    if !stack.is_empty() {
        return Err(NotMultistatus::NotXml("the XML ends early".into()));
    }
    Ok(responses)
}

fn name_of(e: &BytesStart) -> String {
    String::from_utf8_lossy(e.name().as_ref())
        .chars()
        .take(60)
        .collect()
}

/// `HTTP/1.1 404 Not Found` → 404.
fn status_code(line: &str) -> Option<u16> {
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_the_range_the_expansion_and_vevents() {
        let from = DateTime::parse_from_rfc3339("2026-01-05T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let to = DateTime::parse_from_rfc3339("2026-01-12T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let body = String::from_utf8(calendar_query(from, to)).unwrap();
        assert!(
            body.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?>"),
            "{body}"
        );
        assert!(
            body.contains(r#"<C:expand start="20260105T000000Z" end="20260112T000000Z"/>"#),
            "{body}"
        );
        assert!(body.contains(r#"<C:comp-filter name="VEVENT"><C:time-range start="20260105T000000Z" end="20260112T000000Z"/>"#), "{body}");
        // What we write, we read: a well-formed document (its root is not a multistatus).
        assert_eq!(
            multistatus(body.as_bytes()),
            Err(NotMultistatus::OtherRoot("C:calendar-query".into()))
        );
    }

    #[test]
    fn a_multistatus_gives_each_response_its_href_status_and_data() {
        let body = br#"<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav">
 <d:response><d:href>/cal/a.ics</d:href><d:propstat><d:prop>
  <cal:calendar-data>BEGIN:VCALENDAR&#13;
SUMMARY:Tom &amp; Jerry&#13;
END:VCALENDAR</cal:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/cal/b.ics</d:href><d:propstat><d:prop>
  <cal:calendar-data><![CDATA[BEGIN:VCALENDAR
END:VCALENDAR]]></cal:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/cal/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/><cal:calendar/></d:resourcetype></d:prop>
  <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>"#;
        let responses = multistatus(body).unwrap();
        assert_eq!(responses.len(), 3);
        assert_eq!(responses[0].href, "/cal/a.ics");
        assert_eq!(responses[0].status, Some(200));
        assert_eq!(
            responses[0].calendar_data.as_deref(),
            Some("BEGIN:VCALENDAR\r\nSUMMARY:Tom & Jerry\r\nEND:VCALENDAR")
        );
        assert_eq!(
            responses[1].calendar_data.as_deref(),
            Some("BEGIN:VCALENDAR\nEND:VCALENDAR")
        );
        assert!(!responses[0].is_calendar && responses[2].is_calendar);
    }

    #[test]
    fn html_and_garbage_are_not_a_multistatus() {
        assert!(matches!(
            multistatus(b"<html><body>Welcome</body></html>"),
            Err(NotMultistatus::OtherRoot(_))
        ));
        for garbage in [
            &b""[..],
            b"not xml at all",
            b"<d:multistatus xmlns:d=\"DAV:\"><d:response>",
            b"<a></b>",
            b"\xff\xfe<x/>",
            b"<m xmlns=\"DAV:\">&bogus;</m>",
        ] {
            assert!(
                multistatus(garbage).is_err(),
                "{:?}",
                String::from_utf8_lossy(garbage)
            );
        }
        assert_eq!(multistatus(b"<multistatus xmlns=\"DAV:\"/>"), Ok(vec![]));
    }

    #[test]
    fn the_propfind_asks_the_resourcetype() {
        let body = String::from_utf8(propfind_resourcetype()).unwrap();
        assert!(
            body.ends_with(
                r#"<D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/></D:prop></D:propfind>"#
            ),
            "{body}"
        );
    }
}
