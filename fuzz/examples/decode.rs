//! Turn a fuzz input into the session file it stands for:
//! `cargo run --example decode -- TARGET INPUT > out.jsonl`
//! (TARGET: open_session or parent_links; other targets' inputs are used as they are).

use arbitrary::{Arbitrary, Unstructured};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, target, input] = &args[..] else {
        eprintln!("usage: decode TARGET INPUT");
        std::process::exit(2);
    };
    let data = std::fs::read(input).expect("read input");
    let out = match target.as_str() {
        "open_session" => pi_session_fuzz::checks::decode_open_input(&data).0,
        "parent_links" => {
            let i = pi_session_fuzz::synth::Input::arbitrary_take_rest(Unstructured::new(&data)).expect("decodes");
            eprintln!("leaves: {:?}", i.leaf_keys());
            i.render()
        }
        _ => data,
    };
    std::io::stdout().write_all(&out).expect("write");
}
