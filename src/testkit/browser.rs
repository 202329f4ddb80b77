//! A real browser for the console's tests: Debian's headless Chromium driven through
//! `chromedriver` (WebDriver) by `fantoccini`, against the test server.
//!
//! Tests find things as a person does, by the words on the page: a field by its label,
//! a button or a link by its text. Each `Browser` starts its own `chromedriver` on a
//! free loopback port with a fresh profile directory, and stops it when dropped.
//! Without `chromedriver` (and `chromium`) the test fails and says how to install them:
//! `scripts/test` does it, or `apt-get install chromium chromium-driver`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::cookies::Cookie;
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use super::server::TestServer;

/// How long a wait for something on the page lasts before the test fails.
const WAIT: Duration = Duration::from_secs(5);

/// What a missing driver's failure says.
pub const INSTALL: &str = "the browser tests need Debian's chromium and chromium-driver: run `bash scripts/test` (it installs them), or `sudo apt-get install chromium chromium-driver`; set CHROMEDRIVER to use another chromedriver";

/// The `chromedriver` to run: `$CHROMEDRIVER`, else the first on `PATH`, else Debian's.
fn chromedriver() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("CHROMEDRIVER") {
        return path.into();
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromedriver"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| "/usr/bin/chromedriver".into())
}

/// A headless Chromium session with its own `chromedriver`, pointed at a test server.
pub struct Browser {
    pub client: Client,
    base: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Ends chromedriver and the Chromium it started (its process group: a test that
    /// panicked never closed its session, and Chromium would outlive it).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// A browser window of 1280 by 900 pixels on `server`.
    pub async fn open(server: &TestServer) -> Browser {
        Browser::sized(server, 1280, 900).await
    }

    /// A phone's window: 360 by 800.
    pub async fn phone(server: &TestServer) -> Browser {
        Browser::sized(server, 360, 800).await
    }

    pub async fn sized(server: &TestServer, width: u32, height: u32) -> Browser {
        let port = crate::testkit::closed_addr().port();
        let path = chromedriver();
        let driver = Command::new(&path)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}; {INSTALL}", path.display()));
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut caps = serde_json::Map::new();
        caps.insert("acceptInsecureCerts".into(), json!(true));
        let mut options = json!({
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--ignore-certificate-errors",
                format!("--window-size={},{height}", width.max(800)),
                format!("--user-data-dir={}", profile.path().display()),
            ],
        });
        // A window is never narrower than about 500 pixels: a narrower page is the
        // device emulation of a phone's viewport instead.
        if width < 800 {
            options["mobileEmulation"] = json!({
                "deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0}
            });
        }
        caps.insert("goog:chromeOptions".into(), options);
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if started.elapsed() > Duration::from_secs(20) => {
                    panic!("chromedriver at {url} gave no browser: {e}; {INSTALL}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Browser {
            client,
            base: server.origin(),
            driver,
            _profile: profile,
        }
    }

    /// Opens `path` of the server.
    pub async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap_or_else(|e| panic!("goto {path}: {e}"));
    }

    /// The path of the page shown.
    pub async fn path(&self) -> String {
        self.client
            .current_url()
            .await
            .expect("url")
            .path()
            .to_string()
    }

    /// The visible text of the page.
    pub async fn text(&self) -> String {
        match self.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Waits until the page shows `text`; fails with what it shows instead.
    pub async fn wait_for_text(&self, text: &str) {
        let started = Instant::now();
        loop {
            let shown = self.text().await;
            if shown.contains(text) {
                return;
            }
            if started.elapsed() > WAIT {
                panic!("the page never showed {text:?}; it shows:\n{shown}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The field (input, textarea, select) whose `<label>` says `label`.
    pub async fn field(&self, label: &str) -> Element {
        let xpath = format!(
            "//*[self::input or self::textarea or self::select][@id=//label[normalize-space(.)={q}]/@for] | //label[normalize-space(.)={q}]//*[self::input or self::textarea or self::select]",
            q = xpath_literal(label)
        );
        self.wait_find(
            Locator::XPath(&xpath),
            &format!("a field labelled {label:?}"),
        )
        .await
    }

    /// Types `text` into the field labelled `label`, replacing what it held.
    pub async fn fill(&self, label: &str, text: &str) {
        let field = self.field(label).await;
        field.clear().await.expect("clear");
        field.send_keys(text).await.expect("type");
    }

    /// Saves what the window shows as a PNG at `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// Chooses the file at `path` in the file field labelled `label`.
    pub async fn attach(&self, label: &str, path: &std::path::Path) {
        let field = self.field(label).await;
        field
            .send_keys(&path.to_string_lossy())
            .await
            .expect("choose a file");
    }

    /// Chooses the option shown as `option` in the select labelled `label`.
    pub async fn select(&self, label: &str, option: &str) {
        let field = self.field(label).await;
        field.select_by_label(option).await.expect("select");
    }

    /// The button (or submit input) whose text is `text`.
    pub async fn button(&self, text: &str) -> Element {
        let xpath = format!(
            "//button[normalize-space(.)={q}] | //input[@type='submit' and @value={q}]",
            q = xpath_literal(text)
        );
        self.wait_find(Locator::XPath(&xpath), &format!("a button {text:?}"))
            .await
    }

    /// Whether a button with this text is on the page now.
    pub async fn has_button(&self, text: &str) -> bool {
        let xpath = format!("//button[normalize-space(.)={}]", xpath_literal(text));
        !self
            .client
            .find_all(Locator::XPath(&xpath))
            .await
            .unwrap_or_default()
            .is_empty()
    }

    /// Clicks the button whose text is `text`. A page replaced between finding the
    /// button and clicking it (the page before a submission still loading) is looked
    /// at again, as a person would.
    pub async fn click_button(&self, text: &str) {
        for _ in 0..5 {
            match self.button(text).await.click().await {
                Ok(_) => return,
                Err(e) if replaced(&e) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("click {text:?}: {e}"),
            }
        }
        panic!("the button {text:?} kept being replaced");
    }

    /// Follows the link whose text is `text`; a page replaced meanwhile is looked at
    /// again, as for a button.
    pub async fn click_link(&self, text: &str) {
        let xpath = format!("//a[normalize-space(.)={}]", xpath_literal(text));
        for _ in 0..5 {
            let link = self
                .wait_find(Locator::XPath(&xpath), &format!("a link {text:?}"))
                .await;
            match link.click().await {
                Ok(_) => return,
                Err(e) if replaced(&e) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("click {text:?}: {e}"),
            }
        }
        panic!("the link {text:?} kept being replaced");
    }

    /// The cookies the browser holds for the server.
    pub async fn cookies(&self) -> Vec<Cookie<'static>> {
        self.client.get_all_cookies().await.expect("cookies")
    }

    /// Runs `script` in the page and answers its value.
    pub async fn run(&self, script: &str) -> serde_json::Value {
        self.client
            .execute(script, Vec::new())
            .await
            .expect("script")
    }

    /// Signs in through the form, as a person does, and waits for the form's answer: a
    /// new page (the inbox, or the form again with its refusal). A click does not wait
    /// for the navigation it starts, and a `goto` racing a slow sign-in (its password
    /// check queued behind others) could be overtaken by the sign-in's redirect.
    pub async fn sign_in(&self, email: &str, password: &str) {
        self.goto("/console/login").await;
        self.fill("Email", email).await;
        self.fill("Password", password).await;
        self.run("window.engagedSigningIn = true; return null;")
            .await;
        self.click_button("Sign in").await;
        let started = Instant::now();
        loop {
            // A script run while the page is being replaced may fail: ask again.
            let still = self
                .client
                .execute("return window.engagedSigningIn === true;", Vec::new())
                .await
                .map_or(true, |v| v == serde_json::Value::Bool(true));
            if !still {
                return;
            }
            if started.elapsed() > 3 * WAIT {
                panic!(
                    "the sign-in was not answered; the page shows:\n{}",
                    self.text().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The text of what the field labelled `label` is described by (`aria-describedby`:
    /// its help and its refusals, shown beside it), one line each.
    pub async fn description(&self, label: &str) -> String {
        let field = self.field(label).await;
        let ids = field
            .attr("aria-describedby")
            .await
            .expect("aria-describedby")
            .unwrap_or_default();
        let script = format!(
            "return {ids:?}.split(' ').filter(Boolean).map(id => document.getElementById(id)).filter(Boolean).map(e => e.innerText.trim()).join('\\n');"
        );
        self.run(&script)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// What breaks the page's layout at the window's width, one line each (none: it
    /// holds): the document wider than the viewport, and each table cell narrower than
    /// its longest word (measured in the page with a `Range` per word; a word ends at
    /// white space or after a hyphen, and a token wider than the page's content, such as
    /// a long email address, may wrap).
    pub async fn layout_faults(&self) -> Vec<String> {
        let script = r#"
            const faults = [];
            const width = document.documentElement.clientWidth;
            if (document.documentElement.scrollWidth > width) {
                faults.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${width} px viewport`);
                for (const e of document.querySelectorAll('body *')) {
                    const r = e.getBoundingClientRect();
                    if (r.right > width + 1 && e.children.length === 0) {
                        faults.push(`<${e.tagName.toLowerCase()}> "${e.textContent.trim().slice(0, 40)}" ends at ${Math.round(r.right)} px`);
                        if (faults.length > 8) break;
                    }
                }
            }
            const main = document.querySelector('main') || document.body;
            const ms = getComputedStyle(main);
            const room = main.clientWidth - parseFloat(ms.paddingLeft) - parseFloat(ms.paddingRight);
            for (const cell of document.querySelectorAll('td, th')) {
                if (cell.offsetParent === null) continue;
                const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
                let widest = 0, word = '';
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    const re = /[^\s-]+-?/g;
                    let m;
                    while ((m = re.exec(node.data))) {
                        const range = document.createRange();
                        range.setStart(node, m.index);
                        range.setEnd(node, m.index + m[0].length);
                        const rects = range.getClientRects();
                        // A word broken over lines shows as several boxes: its width is their sum.
                        let w = 0;
                        for (const r of rects) w += r.width;
                        if (w > widest) { widest = w; word = m[0]; }
                    }
                }
                const style = getComputedStyle(cell);
                const inner = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
                if (widest > inner + 1 && widest <= room) {
                    faults.push(`a cell ${Math.round(inner)} px wide holds "${word}" (${Math.round(widest)} px)`);
                }
            }
            return faults;
        "#;
        match self.run(script).await {
            serde_json::Value::Array(faults) => faults
                .into_iter()
                .map(|f| f.as_str().unwrap_or_default().to_string())
                .collect(),
            other => vec![format!("the layout script answered {other}")],
        }
    }

    async fn wait_find(&self, locator: Locator<'_>, what: &str) -> Element {
        let started = Instant::now();
        loop {
            if let Ok(found) = self.client.find(locator).await {
                return found;
            }
            if started.elapsed() > WAIT {
                panic!("no {what} on the page; it shows:\n{}", self.text().await);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether a command failed because the element it was given left the page: the page
/// was replaced between finding the element and using it. WebDriver says so as a stale
/// element; Chrome sometimes says it as an unknown error from its inspector ("Node with
/// given id does not belong to the document") when the replacement lands mid-command.
fn replaced(error: &fantoccini::error::CmdError) -> bool {
    use fantoccini::error::{CmdError, ErrorStatus};
    match error {
        CmdError::Standard(e) => {
            e.error == ErrorStatus::StaleElementReference
                || (e.error == ErrorStatus::UnknownError
                    && e.message.contains("does not belong to the document"))
        }
        _ => false,
    }
}

/// `text` as an XPath string literal, whatever quotes it holds.
fn xpath_literal(text: &str) -> String {
    if !text.contains('\'') {
        return format!("'{text}'");
    }
    if !text.contains('"') {
        return format!("\"{text}\"");
    }
    let parts: Vec<String> = text.split('\'').map(|p| format!("'{p}'")).collect();
    format!("concat({})", parts.join(", \"'\", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_text_becomes_an_xpath_literal() {
        assert_eq!(xpath_literal("Sign in"), "'Sign in'");
        assert_eq!(xpath_literal("Ana's"), "\"Ana's\"");
        assert_eq!(xpath_literal("a'b\"c"), "concat('a', \"'\", 'b\"c')");
    }
}
