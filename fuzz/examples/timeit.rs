//! Time each query of `checks::exercise` on one session file (to explain slow units):
//! `cargo run --release --example timeit -- FILE`

use pi_session::{Key, Session};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: timeit FILE");
    let bytes = std::fs::read(&path).expect("read");
    let t = Instant::now();
    let s = Session::from_bytes(bytes.clone());
    println!("open: {:?} ok={}", t.elapsed(), s.is_ok());
    let Ok(mut s) = s else { return };
    let leaf = s.leaf().clone();
    macro_rules! time {
        ($name:expr, $e:expr) => {{
            let t = Instant::now();
            let r = $e;
            println!("{}: {:?} ok={}", $name, t.elapsed(), r.is_ok());
        }};
    }
    time!("branch_path", s.branch_path(None));
    time!("context", s.context(&leaf));
    time!("context_entries", s.context_entries(&leaf));
    println!("tree_visits: {}", pi_session_fuzz::checks::tree_visits(&s));
    time!("tree", s.tree());
    time!("tree_nested", s.tree_nested());
    time!("tree_flat", s.tree_flat());
    time!("session_name", s.session_name());
    time!("branch_items", s.branch_items());
    let t = Instant::now();
    for i in 0..s.index().len() {
        let _ = s.entry(pi_session::EntryPos(i as u32));
    }
    println!("entries: {:?}", t.elapsed());
    let t = Instant::now();
    pi_session_fuzz::checks::exercise(&mut s, &[Key::Null]);
    println!("exercise: {:?}", t.elapsed());
    for sel in [0u8, 1, 2, 3, 4, 8] {
        let t = Instant::now();
        pi_session_fuzz::checks::check_dump(std::path::Path::new(&path), sel);
        println!("dump sel={sel}: {:?}", t.elapsed());
    }
}
