//! Mutators: a small random source and two ways to derive a new input
//! from a valid one, byte-level (for wire bytes, dump files, shm
//! segments) and structure-aware (for JSON configurations).

use serde_json::{json, Value};

/// splitmix64: small, fast, and reproducible from one number, so a failing
/// run can be replayed by its start value.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source whose whole sequence is fixed by `start`.
    pub fn new(start: u64) -> Rng {
        Rng(start)
    }
    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// True with probability 1/`one_in` (`one_in` > 0).
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    /// A uniformly chosen element of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values at the edges of every integer type the schema and configs use.
pub const EDGE_U64: &[u64] = &[
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    (1 << 53) + 1,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX - 1,
    u64::MAX,
];

/// Protobuf varint of `v` (up to 10 bytes).
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One random byte-level change of `input`; `others` are the rest of the
/// corpus, for splicing.
pub fn mutate_bytes(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut b = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = b.len();
        match rng.below(11) {
            // flip a bit
            0 if len > 0 => {
                let i = rng.below(len);
                b[i] ^= 1 << rng.below(8);
            }
            // an edge byte
            1 if len > 0 => {
                let i = rng.below(len);
                b[i] = *rng.pick(&[0u8, 1, 0x7f, 0x80, 0xfe, 0xff]);
            }
            // a random byte
            2 if len > 0 => {
                let i = rng.below(len);
                b[i] = rng.next_u64() as u8;
            }
            // insert random bytes
            3 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let fill: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                b.splice(at..at, fill);
            }
            // delete a range
            4 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                b.drain(at..at + n);
            }
            // duplicate a range
            5 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(64));
                let piece = b[at..at + n].to_vec();
                let to = rng.below(b.len() + 1);
                b.splice(to..to, piece);
            }
            // overwrite with an edge integer, little- or big-endian
            6 if len > 0 => {
                let v = *rng.pick(EDGE_U64);
                let w = *rng.pick(&[1usize, 2, 4, 8]);
                let bytes = if rng.chance(2) {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                let at = rng.below(len);
                for (k, x) in bytes[..w].iter().enumerate() {
                    if at + k < b.len() {
                        b[at + k] = *x;
                    }
                }
            }
            // insert an edge varint (what protobuf lengths and fields are)
            7 => {
                let mut v = Vec::new();
                varint(*rng.pick(EDGE_U64), &mut v);
                let at = rng.below(len + 1);
                b.splice(at..at, v);
            }
            // truncate
            8 if len > 0 => b.truncate(rng.below(len)),
            // splice another corpus entry's tail
            9 if !others.is_empty() => {
                let o = rng.pick(others);
                if !o.is_empty() {
                    let from = rng.below(o.len());
                    let at = rng.below(len + 1);
                    b.truncate(at);
                    b.extend_from_slice(&o[from..]);
                }
            }
            // repeat the whole input (long inputs, many records)
            10 if len > 0 && len < 1 << 16 => {
                let copy = b.clone();
                b.extend_from_slice(&copy);
            }
            _ => {}
        }
    }
    b
}

/// Replacement values a config key may meet: wrong types, edges of
/// every numeric range, strings C cannot carry, deep nesting.
fn hostile_value(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(*rng.pick(&[
            0i64,
            -1,
            1,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN
        ])),
        3 => json!(*rng.pick(EDGE_U64)),
        4 => json!(*rng.pick(&[0.5f64, -0.5, 1e300, -1e300, 1e-300, 4.0e9, 1.8e19])),
        5 => json!(""),
        6 => json!("a\u{0}b"),
        7 => json!("x".repeat(1 + rng.below(5000))),
        8 => json!(*rng.pick(&[
            "tcp://*:0",
            "tcp://127.0.0.1:99999",
            "ipc://",
            "shm://",
            "shm://../../etc/passwd",
            "inproc://",
            "name://x",
            "tcp://[::1]:5",
            "PUSH",
            "SUB",
            "drop",
            "\u{202e}"
        ])),
        9 => json!([]),
        10 => json!({}),
        11 => {
            let depth = 1 + rng.below(300);
            let mut v = json!(1);
            for _ in 0..depth {
                v = json!([v]);
            }
            v
        }
        12 => json!([hostile_scalar(rng), hostile_scalar(rng)]),
        13 => json!({"socket": {"type": "PULL", "connect": ["tcp://127.0.0.1:1"]}}),
        14 => json!(rng.next_u64() as i64),
        _ => json!(-(rng.below(1000) as i64)),
    }
}

fn hostile_scalar(rng: &mut Rng) -> Value {
    loop {
        let v = hostile_value(rng);
        if !v.is_array() && !v.is_object() {
            return v;
        }
    }
}

/// Count the nodes of `v` (objects, arrays and scalars).
fn nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(nodes).sum(),
        Value::Object(o) => o.values().map(nodes).sum(),
        _ => 0,
    }
}

/// Call `f` on the `k`-th node of `v` in pre-order; false when there is none.
fn with_nth(v: &mut Value, k: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *k == 0 {
        f(v);
        return true;
    }
    *k -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|x| with_nth(x, k, f)),
        Value::Object(o) => o.values_mut().any(|x| with_nth(x, k, f)),
        _ => false,
    }
}

/// The `k`-th node of `v` in pre-order, cloned.
fn nth(v: &Value, k: usize) -> Value {
    let mut out = Value::Null;
    let mut v = v.clone();
    let mut k = k;
    with_nth(&mut v, &mut k, &mut |x| out = x.clone());
    out
}

/// One random change of one node.
fn mutate_node(rng: &mut Rng, node: &mut Value, others: &[Value]) {
    match rng.below(7) {
        0..=2 => *node = hostile_value(rng),
        3 => match node {
            Value::Array(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                a.remove(i);
            }
            Value::Object(o) if !o.is_empty() => {
                let key = o
                    .keys()
                    .nth(rng.below(o.len()))
                    .cloned()
                    .unwrap_or_default();
                o.remove(&key);
            }
            _ => *node = Value::Null,
        },
        4 => match node {
            Value::Array(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                let x = a[i].clone();
                a.push(x);
            }
            Value::Object(o) => {
                let key = rng
                    .pick(&[
                        "type", "bind", "connect", "hwm", "tspan", "tbuf", "name", "data", "x",
                    ])
                    .to_string();
                o.insert(key, hostile_value(rng));
            }
            _ => {}
        },
        // graft a node of another corpus entry
        5 if !others.is_empty() => {
            let o = rng.pick(others);
            *node = nth(o, rng.below(nodes(o)));
        }
        _ => {
            if let Value::Object(o) = node {
                if let Some(key) = o.keys().nth(rng.below(o.len().max(1))).cloned() {
                    if let Some(x) = o.remove(&key) {
                        o.insert(key.to_uppercase(), x);
                    }
                }
            }
        }
    }
}

/// One random structure-aware change of a JSON document: a node replaced,
/// removed, duplicated, grafted from another document, or a key renamed.
pub fn mutate_json(rng: &mut Rng, input: &Value, others: &[Value]) -> Value {
    let mut v = input.clone();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let mut k = rng.below(nodes(&v));
        let mut r = rng.clone();
        with_nth(&mut v, &mut k, &mut |node| {
            mutate_node(&mut r, node, others)
        });
        *rng = r;
        rng.next_u64();
    }
    v
}

/// A JSON document's text, sometimes damaged at the byte level so the
/// parser itself is exercised (unterminated strings, stray bytes).
pub fn json_text(rng: &mut Rng, v: &Value) -> Vec<u8> {
    let text = serde_json::to_vec(v).unwrap_or_default();
    if rng.chance(8) {
        mutate_bytes(rng, &text, &[])
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_matches_protobuf_lengths() {
        for (v, n) in [(0u64, 1), (127, 1), (128, 2), (u64::MAX, 10)] {
            let mut b = Vec::new();
            varint(v, &mut b);
            assert_eq!(b.len(), n, "{v}");
        }
    }

    #[test]
    fn mutations_change_inputs_and_are_reproducible() {
        let input = b"0123456789abcdef".to_vec();
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut changed = 0;
        for _ in 0..200 {
            let x = mutate_bytes(&mut a, &input, &[]);
            assert_eq!(x, mutate_bytes(&mut b, &input, &[]));
            changed += usize::from(x != input);
        }
        assert!(
            changed > 150,
            "only {changed} of 200 mutations changed the input"
        );
        let doc = json!({"socket": {"type": "PUSH", "bind": ["tcp://*:1"]}});
        let mut changed = 0;
        for _ in 0..200 {
            changed += usize::from(mutate_json(&mut a, &doc, &[]) != doc);
        }
        assert!(
            changed > 150,
            "only {changed} of 200 JSON mutations changed it"
        );
    }
}
