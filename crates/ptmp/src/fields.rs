//! Typed, path-aware reading of JSON configuration objects.
//!
//! Three configurations are read the same way: the socket config (`socket`),
//! an agent's `data` object and a graph (`nodes[2]`, `edges[0]`, ...). Each
//! reads an [`Object`] through typed getters that check type and range, and
//! every problem comes back as a [`FieldError`] saying where (the object's
//! path and the key), what (the value as JSON writes it, abbreviated when
//! asked) and why (a [`Problem`]). Callers word the final message from those
//! parts, so each configuration keeps its own phrasing while the checks, and
//! the list of keys an object may carry, live in one place.
//!
//! Null counts as absent for every typed getter, as Jsonnet writes `null` for
//! "not given"; [`Object::raw`] sees it when a caller must tell them apart.

use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// What is wrong with a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The value should be a JSON object and is not.
    NotObject,
    /// A required key is absent (or null).
    Missing,
    /// The key is not one the object may carry.
    UnknownKey {
        /// The keys the object may carry, in the caller's order.
        known: Vec<&'static str>,
    },
    /// The value has the wrong JSON type; `expected` says what it should
    /// be, e.g. `"a string"` or `"an integer"`.
    WrongType {
        /// What the value should be, with its article.
        expected: &'static str,
    },
    /// An integer outside its inclusive range.
    IntRange {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// A number outside its inclusive range.
    NumRange {
        /// Smallest allowed value.
        min: f64,
        /// Largest allowed value.
        max: f64,
    },
    /// A string that is not one of a fixed set of names.
    NotChoice {
        /// The string as given.
        got: String,
        /// The names it may be.
        allowed: Vec<&'static str>,
    },
    /// Anything else, said in words.
    Invalid(String),
}

impl Problem {
    /// The reason in this module's own wording (the socket config's).
    pub fn reason(&self) -> String {
        match self {
            Problem::NotObject => "must be an object".into(),
            Problem::Missing => "required key".into(),
            Problem::UnknownKey { known } => {
                format!("unknown key; known keys are {}", known.join(", "))
            }
            Problem::WrongType { expected } => format!("must be {expected}"),
            Problem::IntRange { min, max } => format!("must be an integer from {min} to {max}"),
            Problem::NumRange { min, max } => format!("must be in [{min}, {max}]"),
            Problem::NotChoice { allowed, .. } => format!("must be one of {}", allowed.join(", ")),
            Problem::Invalid(s) => s.clone(),
        }
    }
}

/// A value that a reader refused: where it is, what it is and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Path of the object holding the key, e.g. `socket` or `edges[1]`;
    /// empty at the top level.
    pub path: String,
    /// The key inside that object; empty when the object itself is wrong.
    pub key: String,
    /// Index into the key's array when one element is wrong.
    pub index: Option<usize>,
    /// The value as JSON writes it (abbreviated when the reader was told
    /// to), or `(missing)`.
    pub value: String,
    /// What is wrong.
    pub problem: Problem,
}

impl FieldError {
    /// The full location: path, key and index, e.g. `socket.bind[0]`.
    pub fn location(&self) -> String {
        let mut s = join(&self.path, &self.key);
        if let Some(i) = self.index {
            s.push_str(&format!("[{i}]"));
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {}: {}",
            self.location(),
            self.value,
            self.problem.reason()
        )
    }
}

impl std::error::Error for FieldError {}

/// Result of a field read. The error is boxed: it is rare, and a small
/// `Result` keeps the happy path cheap.
pub type FieldResult<T> = std::result::Result<T, Box<FieldError>>;

fn join(path: &str, key: &str) -> String {
    match (path.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => path.to_string(),
        (false, false) => format!("{path}.{key}"),
    }
}

/// `s` cut to at most `limit` bytes' worth of characters: longer text keeps
/// its first `limit - 3` characters and ends in `...`.
pub fn abbreviate(s: &str, limit: usize) -> String {
    if s.len() > limit {
        let keep = limit.saturating_sub(3);
        let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
        format!("{}...", &s[..end])
    } else {
        s.to_string()
    }
}

/// The one of `known` that `key` most likely misspells: equal but for
/// case, or within a small edit distance (one edit for keys of up to four
/// characters, two up to eight, three beyond), the nearest first. `None`
/// when nothing is that close: then it is more likely another program's key
/// than a typo.
pub fn nearest<'k>(key: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let key_l = key.to_lowercase();
    let limit = match key.chars().count() {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    known
        .into_iter()
        .filter(|k| *k != key)
        .map(|k| {
            let d = if k.to_lowercase() == key_l {
                0
            } else {
                edit_distance(&key_l, &k.to_lowercase())
            };
            (d, k)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance with adjacent transpositions counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the table.
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// How a reader shows values and which numbers count as integers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Accept a float with no fraction (`10.0`, as Jsonnet writes numbers)
    /// where an integer is wanted.
    pub integral_floats: bool,
    /// Abbreviate values in errors longer than this many bytes (see
    /// [`abbreviate`]); `None` shows them whole.
    pub show_limit: Option<usize>,
}

/// A JSON object being read, with its path for errors and a record of the
/// keys asked for.
#[derive(Debug)]
pub struct Object<'a> {
    path: String,
    map: &'a Map<String, Value>,
    opts: Options,
    read: RefCell<Vec<String>>,
}

/// Whether a list read by [`Object::strings`] may be empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// `[]` is a valid value.
    Allowed,
    /// `[]` is refused like a value of the wrong type.
    Refused,
}

impl<'a> Object<'a> {
    /// Read `v`, found at `path`, as an object; the error, when `v` is not
    /// one, has an empty key and [`Problem::NotObject`].
    pub fn new(path: impl Into<String>, v: &'a Value, opts: Options) -> FieldResult<Self> {
        let path = path.into();
        match v.as_object() {
            Some(map) => Ok(Object {
                path,
                map,
                opts,
                read: RefCell::new(Vec::new()),
            }),
            None => Err(Box::new(FieldError {
                value: show(v, opts),
                path,
                key: String::new(),
                index: None,
                problem: Problem::NotObject,
            })),
        }
    }

    /// The object's path, e.g. `socket` or `nodes[2]`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The object's options.
    pub fn options(&self) -> Options {
        self.opts
    }

    /// The underlying map, without marking anything read.
    pub fn map(&self) -> &'a Map<String, Value> {
        self.map
    }

    /// `key` joined to this object's path, e.g. `socket.hwm`.
    pub fn key_path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// `v` as this reader shows values in errors.
    pub fn show(&self, v: &Value) -> String {
        show(v, self.opts)
    }

    /// An error at `key` with `value` (already shown) and `problem`.
    pub fn error(&self, key: &str, value: impl Into<String>, problem: Problem) -> Box<FieldError> {
        Box::new(FieldError {
            path: self.path.clone(),
            key: key.to_string(),
            index: None,
            value: value.into(),
            problem,
        })
    }

    fn wrong(&self, key: &str, v: &Value, problem: Problem) -> Box<FieldError> {
        self.error(key, self.show(v), problem)
    }

    /// The value of `key` as written, null included; marks the key read.
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        let mut r = self.read.borrow_mut();
        if !r.iter().any(|k| k == key) {
            r.push(key.to_string());
        }
        self.map.get(key)
    }

    /// The value of `key`, if present and not null; marks the key read.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.raw(key).filter(|v| !v.is_null())
    }

    /// Whether `key` is present and not null.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `Missing` at `key` when `got` is `None`.
    pub fn required<T>(&self, key: &str, got: Option<T>) -> FieldResult<T> {
        got.ok_or_else(|| self.error(key, "(missing)", Problem::Missing))
    }

    /// Refuse any key not in `known`; the error names the first unknown
    /// key (in the object's order) and carries the known list.
    pub fn only(&self, known: &[&'static str]) -> FieldResult<()> {
        match self.map.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some((k, v)) => Err(self.wrong(
                k,
                v,
                Problem::UnknownKey {
                    known: known.to_vec(),
                },
            )),
        }
    }

    /// Every key asked for so far, present or not, in the order asked:
    /// the keys this object's reader knows.
    pub fn asked(&self) -> Vec<String> {
        self.read.borrow().clone()
    }

    /// Keys present but never asked for, in the object's order.
    pub fn unread(&self) -> Vec<String> {
        let r = self.read.borrow();
        self.map
            .keys()
            .filter(|k| !r.iter().any(|x| x == *k))
            .cloned()
            .collect()
    }

    fn integer(&self, v: &Value) -> Option<i64> {
        if let Some(i) = v.as_i64() {
            Some(i)
        } else if !self.opts.integral_floats {
            None
        } else if let Some(u) = v.as_u64() {
            i64::try_from(u).ok()
        } else {
            v.as_f64()
                .and_then(|f| (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64))
        }
    }

    /// An integer in `[min, max]`: `WrongType` ("an integer") when it is
    /// not one, `IntRange` when it is outside.
    pub fn int_in(&self, key: &str, min: i64, max: i64) -> FieldResult<Option<i64>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = self.integer(v).ok_or_else(|| {
            self.wrong(
                key,
                v,
                Problem::WrongType {
                    expected: "an integer",
                },
            )
        })?;
        if !(min..=max).contains(&n) {
            return Err(self.wrong(key, v, Problem::IntRange { min, max }));
        }
        Ok(Some(n))
    }

    /// A non-negative integer up to `u64::MAX` (`WrongType`, "a
    /// non-negative integer", otherwise).
    pub fn u64(&self, key: &str) -> FieldResult<Option<u64>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        if let Some(u) = v.as_u64() {
            return Ok(Some(u));
        }
        if self.opts.integral_floats {
            if let Some(f) = v.as_f64() {
                if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 {
                    return Ok(Some(f as u64));
                }
            }
        }
        Err(self.wrong(
            key,
            v,
            Problem::WrongType {
                expected: "a non-negative integer",
            },
        ))
    }

    /// A number (integer or float) in `[min, max]`.
    pub fn num_in(&self, key: &str, min: f64, max: f64) -> FieldResult<Option<f64>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let f = v.as_f64().ok_or_else(|| {
            self.wrong(
                key,
                v,
                Problem::WrongType {
                    expected: "a number",
                },
            )
        })?;
        if !(min..=max).contains(&f) {
            return Err(self.wrong(key, v, Problem::NumRange { min, max }));
        }
        Ok(Some(f))
    }

    /// A string.
    pub fn str(&self, key: &str) -> FieldResult<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong(
                key,
                v,
                Problem::WrongType {
                    expected: "a string",
                },
            )),
        }
    }

    /// A string that must be one of `allowed` (`NotChoice` otherwise).
    pub fn choice(&self, key: &str, allowed: &[&'static str]) -> FieldResult<Option<&'static str>> {
        let Some(s) = self.str(key)? else {
            return Ok(None);
        };
        match allowed.iter().find(|a| **a == s) {
            Some(a) => Ok(Some(a)),
            None => Err(self.error(
                key,
                Value::from(s).to_string(),
                Problem::NotChoice {
                    got: s.to_string(),
                    allowed: allowed.to_vec(),
                },
            )),
        }
    }

    /// A flag: `true`/`false`, or 0/1 as PTMP's configurations write flags.
    pub fn bool(&self, key: &str) -> FieldResult<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) if n.as_u64() == Some(0) => Ok(Some(false)),
            Some(Value::Number(n)) if n.as_u64() == Some(1) => Ok(Some(true)),
            Some(v) => Err(self.wrong(
                key,
                v,
                Problem::WrongType {
                    expected: "true or false",
                },
            )),
        }
    }

    /// An array.
    pub fn array(&self, key: &str) -> FieldResult<Option<&'a Vec<Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.wrong(
                key,
                v,
                Problem::WrongType {
                    expected: "an array",
                },
            )),
        }
    }

    /// A string or a list of strings, as a list. A value of another type
    /// is `WrongType` ("a string or a list of strings", or "... a non-empty
    /// list ..." when `empty` is refused); an element that is not a string
    /// is `WrongType` ("a string") with its index.
    pub fn strings(&self, key: &str, empty: Empty) -> FieldResult<Option<Vec<&'a str>>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        self.strings_of(key, v, empty).map(Some)
    }

    /// [`Object::strings`] for a value already at hand (found at `key`).
    pub fn strings_of(&self, key: &str, v: &'a Value, empty: Empty) -> FieldResult<Vec<&'a str>> {
        let expected = match empty {
            Empty::Allowed => "a string or a list of strings",
            Empty::Refused => "a string or a non-empty list of strings",
        };
        match v {
            Value::String(s) => Ok(vec![s.as_str()]),
            Value::Array(a) if !(a.is_empty() && empty == Empty::Refused) => a
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_str().ok_or_else(|| {
                        let mut e = self.wrong(
                            key,
                            x,
                            Problem::WrongType {
                                expected: "a string",
                            },
                        );
                        e.index = Some(i);
                        e
                    })
                })
                .collect(),
            v => Err(self.wrong(key, v, Problem::WrongType { expected })),
        }
    }

    /// A nested object, read with this reader's options at path
    /// `PATH.key`.
    pub fn object(&self, key: &str) -> FieldResult<Option<Object<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => Object::new(self.key_path(key), v, self.opts)
                .map(Some)
                .map_err(|mut e| {
                    e.path = self.path.clone();
                    e.key = key.to_string();
                    e
                }),
        }
    }
}

fn show(v: &Value, opts: Options) -> String {
    let s = v.to_string();
    match opts.show_limit {
        Some(n) => abbreviate(&s, n),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: &Value) -> Object<'_> {
        Object::new("socket", v, Options::default()).unwrap()
    }

    #[test]
    fn errors_carry_path_key_value_and_problem() {
        let v = json!({"hwm": -3, "t": 5, "m": "grp", "l": ["a", 2], "f": 10.0});
        let o = obj(&v);
        assert_eq!(
            o.int_in("hwm", 0, 9).unwrap_err().to_string(),
            "socket.hwm = -3: must be an integer from 0 to 9"
        );
        let e = o.str("t").unwrap_err();
        assert_eq!(e.location(), "socket.t");
        assert_eq!(e.value, "5");
        let e = o.choice("m", &["private", "group"]).unwrap_err();
        assert_eq!(e.value, "\"grp\"");
        let e = o.strings("l", Empty::Allowed).unwrap_err();
        assert_eq!(e.location(), "socket.l[1]");
        assert!(o.int_in("f", 0, 99).is_err());
        let lenient = Object::new(
            "",
            &v,
            Options {
                integral_floats: true,
                show_limit: None,
            },
        )
        .unwrap();
        assert_eq!(lenient.int_in("f", 0, 99).unwrap(), Some(10));
        assert_eq!(
            lenient.required("x", lenient.int_in("x", 0, 1).unwrap()),
            Err(Box::new(FieldError {
                path: String::new(),
                key: "x".into(),
                index: None,
                value: "(missing)".into(),
                problem: Problem::Missing
            }))
        );
    }

    #[test]
    fn nearest_key_is_a_likely_typo_only() {
        let known = ["rate", "tspan", "sync_time", "tick_per_us", "output"];
        assert_eq!(nearest("rat", known), Some("rate"));
        assert_eq!(nearest("sync_tme", known), Some("sync_time"));
        assert_eq!(nearest("tpsan", known), Some("tspan"));
        assert_eq!(nearest("Output", known), Some("output"));
        assert_eq!(nearest("tick_per_ms", known), Some("tick_per_us"));
        // Far from everything: another program's key, not a typo.
        assert_eq!(nearest("threshold", known), None);
        assert_eq!(nearest("rate", known), None, "a known key is no typo");
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
    }

    #[test]
    fn unknown_and_unread_keys() {
        let v = json!({"a": 1, "b": null, "c": 3});
        let o = obj(&v);
        let e = o.only(&["a", "b"]).unwrap_err();
        assert_eq!(e.location(), "socket.c");
        assert!(matches!(e.problem, Problem::UnknownKey { .. }));
        assert_eq!(o.get("b"), None);
        assert_eq!(o.raw("b"), Some(&Value::Null));
        o.get("a");
        assert_eq!(o.unread(), vec!["c".to_string()]);
    }

    #[test]
    fn nested_objects_extend_the_path() {
        let v = json!({"data": {"x": "no"}, "bad": 3});
        let top = Object::new("agents[2]", &v, Options::default()).unwrap();
        let d = top.object("data").unwrap().unwrap();
        assert_eq!(
            d.int_in("x", 0, 1).unwrap_err().location(),
            "agents[2].data.x"
        );
        let e = top.object("bad").unwrap_err();
        assert_eq!(
            (e.location(), e.problem),
            ("agents[2].bad".into(), Problem::NotObject)
        );
    }

    #[test]
    fn abbreviation() {
        assert_eq!(abbreviate("abcdef", 6), "abcdef");
        assert_eq!(abbreviate("abcdefg", 6), "abc...");
    }
}
