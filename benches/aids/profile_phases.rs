//! Times the phases of opening and checking a session (a profiling aid).
use pi_session::{OpenOptions, Session};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: profile_phases FILE");
    let t = Instant::now();
    let s = Session::open_with(&path, OpenOptions::default()).expect("open");
    let t_open = t.elapsed();
    let t = Instant::now();
    let b = s.branch_path(None).expect("branch");
    let t_branch = t.elapsed();
    let t = Instant::now();
    let c = s.context(s.leaf()).expect("context");
    let t_ctx = t.elapsed();
    let t = Instant::now();
    let tree = s.tree().expect("tree");
    let t_tree = t.elapsed();
    let t = Instant::now();
    let n = s.session_name().expect("name");
    let t_name = t.elapsed();
    println!(
        "open {:?} branch {:?} ({}) context {:?} ({}) tree {:?} ({} roots) name {:?} ({:?})",
        t_open,
        t_branch,
        b.len(),
        t_ctx,
        c.messages.len(),
        t_tree,
        tree.roots.len(),
        t_name,
        n
    );
    let t = Instant::now();
    let idx = pi_session::internals::build(s.bytes());
    println!("index alone {:?} ({} entries)", t.elapsed(), idx.len());
}
