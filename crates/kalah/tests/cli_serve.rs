//! `kalah serve` run as a user would: the API's values against the reference minimax, the
//! position each move leads to, bounds when the budget runs out, errors for bad requests, the
//! OpenAPI document, the page, CORS, many requests at once.

#[path = "../../../tests/reference.rs"]
mod reference;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    // A 4-seed database of 3 houses under empty capture, built where serve looks for it.
    let db = dir.path().join("db");
    let st = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args([
            "db",
            "build",
            "--houses",
            "3",
            "--capture",
            "empty",
            "--upto",
            "10",
            "--dir",
        ])
        .arg(db.join("h3-empty-owner-either"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_kalah"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(&db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server {
        child,
        addr,
        _dir: dir,
    }
}

/// A GET over plain HTTP/1.1: (status, headers, body).
fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_string())
}

fn get_json(addr: &str, path: &str) -> (u16, Value) {
    let (status, head, body) = get(addr, path);
    assert!(head.contains("access-control-allow-origin: *"), "{head}");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")),
    )
}

fn enc(s: &str) -> String {
    s.replace(' ', "%20")
        .replace('/', "%2F")
        .replace('[', "%5B")
        .replace(']', "%5D")
        .replace(':', "%3A")
}

/// The reference value of sowing house `h` at `pos` for the player to move, and the value of
/// the position it leads to for the player to move there.
fn move_value(rules: &kalah_solver::Rules, pos: &kalah_solver::Position, h: usize) -> (i64, i64) {
    let (next, s) = pos.play(rules, h);
    let nb = next.board();
    let child = reference::ref_board_value(rules, nb.mover(), nb.opponent());
    if s.extra_turn {
        (s.gain as i64 + child, child)
    } else {
        (s.gain as i64 - child, child)
    }
}

#[test]
fn values_follow_the_reference_along_a_game() {
    let srv = start(&[]);
    // 3 houses, 3 seeds (18 seeds: beyond the 10-seed database, so the search answers first).
    let rules = kalah_solver::Rules {
        houses: 3,
        seeds: 3,
        capture: "empty".parse().unwrap(),
        ..kalah_solver::Rules::default()
    };
    let q = "houses=3&seeds=3&capture=empty";
    let (st, mut v) = get_json(&srv.addr, &format!("/api/v1/position?{q}"));
    assert_eq!(st, 200, "{v}");
    let mut sources = std::collections::HashSet::new();
    let mut lines = 0;
    // Follow the first listed move until the game ends, checking every value on the way.
    for _ in 0..60 {
        let pos = kalah_solver::parse_position(v["position"].as_str().unwrap(), 3).unwrap();
        let b = pos.board();
        let want = reference::ref_board_value(&rules, b.mover(), b.opponent());
        assert_eq!(v["value"].as_i64(), Some(want), "{v}");
        assert_eq!(
            v["margin"].as_i64(),
            Some(want + pos.store_lead() as i64),
            "{v}"
        );
        sources.insert(v["source"].as_str().unwrap().to_string());
        if v["source"] == "database" && v["over"] == false {
            // The line from the database plays best moves to the end of the game.
            let pv = v["pv"].as_array().unwrap();
            assert!(!pv.is_empty(), "{v}");
            let (mut p, mut value) = (pos, want);
            for m in pv {
                let m = m.as_str().unwrap();
                assert!(m.starts_with(p.to_move().letter()), "{m} in {v}");
                let h = m[1..].parse::<usize>().unwrap() - 1;
                let (next, _) = p.play(&rules, h);
                let (mv, child) = move_value(&rules, &p, h);
                assert_eq!(mv, value, "{m} in {v}");
                (p, value) = (next, child);
            }
            assert!(p.board().final_value(&rules).is_some(), "{v}");
            lines += 1;
        }
        if v["over"] == true {
            break;
        }
        for m in v["moves"].as_array().unwrap() {
            let h = m["house"].as_u64().unwrap() as usize - 1;
            let (next, s) = pos.play(&rules, h);
            assert_eq!(m["next"].as_str().unwrap(), next.full());
            assert_eq!(m["extra_turn"].as_bool().unwrap(), s.extra_turn);
            let (mv, _) = move_value(&rules, &pos, h);
            assert_eq!(m["value"].as_i64(), Some(mv), "move {} of {v}", h + 1);
        }
        let best = v["best"].as_array().unwrap();
        assert!(!best.is_empty());
        let first = &v["moves"].as_array().unwrap()[0];
        let next = first["next"].as_str().unwrap().to_string();
        v = get_json(
            &srv.addr,
            &format!("/api/v1/position?{q}&position={}", enc(&next)),
        )
        .1;
    }
    assert!(
        sources.contains("search") && sources.contains("database") && lines > 0,
        "{sources:?} {lines}"
    );
}

#[test]
fn bad_requests_get_400_and_json() {
    let srv = start(&[]);
    for path in [
        "/api/v1/position?houses=9",
        "/api/v1/position?houses=x",
        "/api/v1/position?capture=sometimes",
        "/api/v1/position?position=1%202%20%2F%203",
        "/api/v1/position?position=%00%01",
        "/api/v1/position?budget_ms=-5",
        "/api/v1/position?what=1",
        "/api/v1/position?position=300%200%20%2F%200%200",
    ] {
        let (st, v) = get_json(&srv.addr, path);
        assert_eq!(st, 400, "{path}: {v}");
        assert!(v["error"].as_str().unwrap().len() > 3, "{path}: {v}");
    }
    let (st, v) = get_json(&srv.addr, "/etc/passwd");
    assert_eq!(st, 404, "{v}");
    let (st, v) = get_json(&srv.addr, "/api/v1/openapi.json");
    assert_eq!(st, 200);
    assert!(v["paths"]["/api/v1/position"]["get"].is_object());
    let (st, _, body) = get(&srv.addr, "/");
    assert_eq!(st, 200);
    assert!(body.contains("<title>Kalah explorer</title>"));
}

#[test]
fn a_budget_gives_proven_bounds_and_many_requests_are_served() {
    let srv = start(&["--searches", "1"]);
    // 6x6 with no database and 50 ms: bounds, not a value; the bounds hold the value of each
    // move's true value (checked loosely: every move within the seeds).
    let (st, v) = get_json(&srv.addr, "/api/v1/position?houses=6&seeds=6&budget_ms=50");
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "bounds", "{v}");
    assert!(v["value"].is_null());
    let lo = v["lower"].as_i64().unwrap();
    let hi = v["upper"].as_i64().unwrap();
    assert!(-72 <= lo && lo < hi && hi <= 72, "{v}");
    // Many database requests at once, from several threads: all answered.
    let addr = srv.addr.clone();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let (st, v) = get_json(
                        &addr,
                        "/api/v1/position?houses=3&capture=empty&position=1%202%200%20%2F%203%201%202",
                    );
                    assert_eq!(st, 200, "{v}");
                    assert_eq!(v["source"], "database");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
