use super::*;

fn err(text: &str) -> String {
    SocketConfig::from_json(text).unwrap_err().to_string()
}

#[test]
fn ptmp_config_parses_with_defaults() {
    let c = SocketConfig::from_json(
        r#"{"socket":{"type":"push","bind":["tcp://*:5678"],"connect":[]}}"#,
    )
    .unwrap();
    assert_eq!(c.stype, SocketType::Push);
    assert_eq!(c.rcvhwm, 1000);
    assert_eq!(c.sndhwm, None);
    assert_eq!(c.bind[0].transport, Transport::Tcp);
    assert_eq!(c.subscribe, vec![Vec::<u8>::new()]);
    let again = SocketConfig::from_value(&c.to_json()).unwrap();
    assert_eq!(again, c);
}

#[test]
fn all_keys() {
    let c = SocketConfig::from_json(
        r#"{"socket":{"type":"Sub","connect":"ipc:///tmp/x","hwm":5,"rcvhwm":7,"sndhwm":9,
            "linger_ms":-1,"subscribe":["a","b"]}}"#,
    )
    .unwrap();
    assert_eq!((c.rcvhwm, c.sndhwm, c.linger), (7, Some(9), None));
    assert_eq!(c.subscribe, vec![b"a".to_vec(), b"b".to_vec()]);
    let c = SocketConfig::from_json(
        r#"{"socket":{"type":"PUB","bind":["inproc://a","tcp://[::1]:7000"],"subscribers":2}}"#,
    )
    .unwrap();
    assert_eq!(c.subscribers, 2);
    assert_eq!(SocketConfig::from_value(&c.to_json()).unwrap(), c);
}

#[test]
fn every_bad_config_names_key_and_value() {
    let e = err("{nope");
    assert!(e.contains("not valid JSON"), "{e}");
    let e = err(r#"{"sock":{}}"#);
    assert!(e.contains("socket") && e.contains("missing"), "{e}");
    let e = err(r#"{"socket":{"type":"PUSHY","bind":["tcp://*:1"]}}"#);
    assert!(e.contains("socket.type") && e.contains("PUSHY"), "{e}");
    let e = err(r#"{"socket":{"type":"PUSH"}}"#);
    assert!(e.contains("no endpoint"), "{e}");
    let e = err(r#"{"socket":{"type":"PAIR","bind":["tcp://*:1"],"connect":["tcp://a:2"]}}"#);
    assert!(e.contains("PAIR") && e.contains("tcp://a:2"), "{e}");
    for (ep, what) in [
        ("tcp://localhost", "HOST:PORT"),
        ("tcp://host:99999", "99999"),
        ("tcp://*:5", "cannot connect to '*'"),
        ("udp://x:1", "unknown transport"),
        ("localhost:5", "not an endpoint"),
        ("inproc://", "needs a name"),
        ("ipc://", "file path"),
        ("tcp://[zz]:1", "IPv6"),
        ("tcp://a\\u0000b:1", "NUL byte"),
        ("ipc:///tmp/a\\u0000b", "NUL byte"),
    ] {
        let e = err(&format!(
            r#"{{"socket":{{"type":"PULL","connect":["tcp://ok:1","{ep}"]}}}}"#
        ));
        assert!(
            e.contains("socket.connect[1]") && e.contains(ep) && e.contains(what),
            "{e}"
        );
    }
    let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hmw":3}}"#);
    assert!(e.contains("socket.hmw") && e.contains("unknown key"), "{e}");
    let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hwm":-3}}"#);
    assert!(e.contains("socket.hwm = -3"), "{e}");
    let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hwm":"big"}}"#);
    assert!(e.contains("socket.hwm = \"big\""), "{e}");
    let e = err(r#"{"socket":{"type":"PUSH","bind":"tcp://*:1","subscribe":["x"]}}"#);
    assert!(e.contains("socket.subscribe"), "{e}");
    let e = err(r#"{"socket":{"type":"PUSH","bind":"tcp://*:1","subscribers":2}}"#);
    assert!(e.contains("socket.subscribers"), "{e}");
    let e = err(r#"{"socket":{"type":"PUSH","bind":[5]}}"#);
    assert!(e.contains("socket.bind[0] = 5"), "{e}");
    let e = err(r#"[1,2]"#);
    assert!(e.contains("JSON object"), "{e}");
}

#[test]
fn builder_matches_json() {
    let built = SocketConfig::builder(SocketType::Sub)
        .connect("ipc:///tmp/x")
        .hwm(7)
        .sndhwm(9)
        .linger(None)
        .subscribe("a")
        .subscribe("b")
        .shm(ShmSettings {
            slots: 64,
            block_timeout: Duration::from_micros(20_500),
            ..Default::default()
        })
        .build()
        .unwrap();
    let parsed: SocketConfig = r#"{"socket":{"type":"SUB","connect":"ipc:///tmp/x","rcvhwm":7,
        "sndhwm":9,"linger_ms":-1,"subscribe":["a","b"],"shm_slots":64,"shm_block_timeout_ms":20}}"#
        .parse()
        .unwrap();
    assert_eq!(built, parsed);
    assert_eq!(built.shm().block_timeout, Duration::from_millis(20));
    assert_eq!(SocketConfig::from_value(&built.to_json()).unwrap(), built);
    let again = built.to_builder().hwm(3).build().unwrap();
    assert_eq!((again.rcvhwm(), again.subscribe().len()), (3, 2));
}

#[test]
fn builder_errors_read_as_json_errors() {
    let b = || SocketConfig::builder(SocketType::Push).bind("tcp://*:1");
    let e = |r: Result<SocketConfig>| r.unwrap_err().to_string();
    assert_eq!(
        e(b()
            .shm(ShmSettings {
                slots: 12,
                ..Default::default()
            })
            .build()),
        "invalid config: socket.shm_slots = 12: must be a power of two"
    );
    assert_eq!(
        e(b().hwm(-3).build()),
        "invalid config: socket.hwm = -3: must be an integer from 0 to 2147483647"
    );
    assert!(e(b().linger(Some(Duration::from_secs(1 << 40))).build()).contains("socket.linger_ms"));
    assert!(e(b().subscribe("x").build()).contains("only a SUB socket subscribes"));
    assert!(e(b().subscribers(2).build()).contains("socket.subscribers = 2"));
    assert!(e(b().connect("tcp://*:5").build()).contains("socket.connect[0]"));
    assert!(e(SocketConfig::builder(SocketType::Push).build()).contains("no endpoint"));
}

#[test]
fn bind_forms() {
    for ep in [
        "tcp://*:*",
        "tcp://*:0",
        "tcp://127.0.0.1:5000",
        "tcp://lo:5000",
        "ipc://*",
        "shm://frames-1",
    ] {
        Endpoint::parse(ep, Attach::Bind, "k").unwrap();
    }
    assert!(Endpoint::parse("shm://a/b", Attach::Bind, "k").is_err());
    assert!(Endpoint::parse(
        &format!("ipc:///tmp/{}", "x".repeat(120)),
        Attach::Bind,
        "k"
    )
    .is_err());
}

#[test]
fn heartbeat_is_read_checked_and_written_back() {
    let c = SocketConfig::from_json(
        r#"{"socket":{"type":"PULL","connect":["tcp://h:1"],"heartbeat_ms":250}}"#,
    )
    .unwrap();
    assert_eq!(c.heartbeat(), Some(Duration::from_millis(250)));
    assert_eq!(SocketConfig::from_value(&c.to_json()).unwrap(), c);
    let c =
        SocketConfig::from_json(r#"{"socket":{"type":"PULL","connect":["tcp://h:1"]}}"#).unwrap();
    assert_eq!(c.heartbeat(), None);
    assert!(!c.to_json().to_string().contains("heartbeat"));
    let e = err(r#"{"socket":{"type":"PULL","connect":["tcp://h:1"],"heartbeat_ms":-1}}"#);
    assert!(e.contains("socket.heartbeat_ms") && e.contains("-1"), "{e}");
    let e = SocketConfig::builder(SocketType::Pull)
        .connect("tcp://h:1")
        .heartbeat(Duration::from_secs(2_000))
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("socket.heartbeat_ms"), "{e}");
}

#[test]
fn a_default_shm_ring_leaves_room_for_several_in_64_mib() {
    assert_eq!(ShmSettings::default().ring_bytes(), DEFAULT_SHM_RING_BYTES);
    // Docker's default /dev/shm holds seven: a graph's several rings fit.
    const _: () = assert!(7 * DEFAULT_SHM_RING_BYTES < 64 << 20);
}

#[test]
fn which_way_a_socket_goes_by_type_then_key() {
    for t in SocketType::ALL {
        let (out, inp) = (t.sends_under("output"), t.sends_under("input"));
        // A type that can only send sends wherever it sits, one that can
        // only receive never does; the rest go by their key.
        match (t.can_send(), t.can_recv()) {
            (true, false) => assert!(out && inp, "{t}"),
            (false, true) => assert!(!out && !inp, "{t}"),
            _ => assert!(out && !inp, "{t}"),
        }
    }
    assert!(SocketType::Stream.sends_under("outputs[1]"));
    assert!(!SocketType::Stream.sends_under("input"));
}
