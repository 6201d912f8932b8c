//! A minimal client of chromium's DevTools protocol over a websocket, and
//! a headless chromium to drive with it: the tests that check the
//! monitor's page in a real browser use these.

use super::get;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A DevTools connection to one page.
pub struct Ws {
    s: TcpStream,
    next: u64,
}

impl Ws {
    /// Connect to the DevTools websocket at `url`.
    pub fn connect(url: &str) -> Ws {
        let rest = url.strip_prefix("ws://").expect("ws url");
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = TcpStream::connect(host).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
        Ws { s, next: 1 }
    }

    fn send_text(&mut self, t: &str) {
        let p = t.as_bytes();
        let mut f = vec![0x81u8];
        match p.len() {
            n if n < 126 => f.push(0x80 | n as u8),
            n if n < 65536 => {
                f.push(0x80 | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(0x80 | 127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [1u8, 2, 3, 4];
        f.extend_from_slice(&mask);
        f.extend(p.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.s.write_all(&f).unwrap();
    }

    fn read_message(&mut self) -> String {
        let mut msg = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.s.read_exact(&mut h).unwrap();
            let mut n = (h[1] & 0x7f) as u64;
            if n == 126 {
                let mut b = [0u8; 2];
                self.s.read_exact(&mut b).unwrap();
                n = u16::from_be_bytes(b) as u64;
            } else if n == 127 {
                let mut b = [0u8; 8];
                self.s.read_exact(&mut b).unwrap();
                n = u64::from_be_bytes(b);
            }
            let mut p = vec![0u8; n as usize];
            self.s.read_exact(&mut p).unwrap();
            match h[0] & 0x0f {
                0x9 | 0xA => continue, // ping, pong
                _ => msg.extend_from_slice(&p),
            }
            if h[0] & 0x80 != 0 {
                return String::from_utf8_lossy(&msg).into_owned();
            }
        }
    }

    /// Call `method` and return its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    /// Call `method`: its result, or the error DevTools answered.
    pub fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next;
        self.next += 1;
        self.send_text(&json!({"id": id, "method": method, "params": params}).to_string());
        loop {
            let v: Value = serde_json::from_str(&self.read_message()).unwrap();
            if v["id"] == id {
                return match v["error"].is_null() {
                    true => Ok(v["result"].clone()),
                    false => Err(v["error"].clone()),
                };
            }
        }
    }

    /// The value of JavaScript `expr` in the page.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }
}

/// Bytes of base64 text (as DevTools gives screenshots).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let b: Vec<u8> = s
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(b.len() * 3 / 4);
    for chunk in b.chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= val(*c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// A headless chromium with a window `width` x `height`, stopped when
/// dropped, and a DevTools connection to its page.
pub struct Browser {
    /// The page.
    pub ws: Ws,
    _child: Kill,
    _profile: tempfile::TempDir,
}

/// A child killed and reaped when dropped.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl Browser {
    /// Start chromium; None (saying so) when it is not installed.
    pub fn start(width: u32, height: u32) -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() {
            super::missing_part(&format!("{CHROMIUM} missing (Debian package chromium)"));
            return None;
        }
        let profile = tempfile::tempdir().unwrap();
        let child = Kill(
            Command::new(CHROMIUM)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                    "--remote-debugging-port=0",
                ])
                .arg(format!("--window-size={width},{height}"))
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg("about:blank")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let port_file = profile.path().join("DevToolsActivePort");
        let mut port = 0u16;
        wait_for("chromium's DevTools port", Duration::from_secs(30), || {
            port = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.parse().ok()))
                .unwrap_or(0);
            port != 0
        });
        let devtools: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut ws_url = String::new();
        wait_for("a page target", Duration::from_secs(30), || {
            let (_, body) = get(devtools, "/json/list");
            ws_url = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.as_array()?
                        .iter()
                        .find(|t| t["type"] == "page")
                        .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(str::to_string))
                })
                .unwrap_or_default();
            !ws_url.is_empty()
        });
        Some(Browser {
            ws: Ws::connect(&ws_url),
            _child: child,
            _profile: profile,
        })
    }

    /// Load `url` in the page.
    pub fn navigate(&mut self, url: &str) {
        self.ws.call("Page.navigate", json!({"url": url}));
    }

    /// Answers the page's `window.prompt` with `text` once it shows,
    /// waiting up to `limit` for it.
    pub fn answer_prompt(&mut self, text: &str, limit: Duration) {
        self.ws.call("Page.enable", json!({}));
        let t0 = Instant::now();
        loop {
            let r = self.ws.try_call(
                "Page.handleJavaScriptDialog",
                json!({"accept": true, "promptText": text}),
            );
            match r {
                Ok(_) => return,
                Err(e) => assert!(t0.elapsed() < limit, "no prompt within {limit:?}: {e}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A screenshot of the whole page, as PNG bytes.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let shot = self.ws.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "not a png");
        png
    }
}
