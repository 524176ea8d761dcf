//! Unit tests: determinism, sizes, valid entries and trees, JavaScript formatting.

use std::collections::HashSet;
use std::fs;
use std::time::UNIX_EPOCH;

use super::json::{put_esc, put_f64, put_iso, uuid_v7};
use super::params::SMALL_MAX_LINE;
use super::rng::Rng;
use super::*;

fn gen_bytes(seed: u64, target: u64, mix: Mix) -> (Vec<u8>, GenStats) {
    let spec = SessionSpec {
        mix,
        ..SessionSpec::new(seed, target)
    };
    let mut v = Vec::new();
    let st = write_session(&spec, &mut v).unwrap();
    (v, st)
}

/// Parses every line, checks ids, parents and timestamps; returns the
/// parsed entries.
fn check_file(bytes: &[u8], small: bool) -> Vec<serde_json::Value> {
    assert_eq!(bytes.last(), Some(&b'\n'));
    let mut ids = HashSet::new();
    let mut last_ts = String::new();
    let mut out = Vec::new();
    for (i, line) in bytes[..bytes.len() - 1].split(|&b| b == b'\n').enumerate() {
        if small {
            assert!(
                (100..SMALL_MAX_LINE).contains(&line.len()),
                "line {} has {} bytes",
                i + 1,
                line.len()
            );
        }
        let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        let o = v.as_object().expect("object");
        let ty = o["type"].as_str().expect("type");
        if i == 0 {
            assert_eq!(ty, "session");
            assert_eq!(o["version"], 3);
            continue;
        }
        let id = o["id"].as_str().expect("id");
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        match &o["parentId"] {
            serde_json::Value::Null => assert_eq!(i, 1, "only the first entry is a root"),
            serde_json::Value::String(p) => assert!(ids.contains(p.as_str()), "line {}: parent {p} unknown", i + 1),
            other => panic!("parentId {other:?}"),
        }
        assert!(ids.insert(id.to_string()), "duplicate id {id}");
        let ts = o["timestamp"].as_str().unwrap().to_string();
        assert!(ts > last_ts, "timestamps increase");
        last_ts = ts;
        out.push(v);
    }
    out
}

#[test]
fn same_seed_same_bytes() {
    for mix in [Mix::Realistic, Mix::SmallEntries, Mix::ImageHeavy] {
        let (a, sa) = gen_bytes(7, 300_000, mix);
        let (b, sb) = gen_bytes(7, 300_000, mix);
        assert!(a == b);
        assert_eq!(sa, sb);
        let (c, _) = gen_bytes(8, 300_000, mix);
        assert!(a != c);
    }
}

#[test]
fn size_within_tolerance() {
    for (seed, target, mix) in [
        (1, 5_000, Mix::Realistic),
        (2, 100_000, Mix::Realistic),
        (3, 3_000_000, Mix::Realistic),
        (4, 5_000, Mix::SmallEntries),
        (5, 250_000, Mix::SmallEntries),
        (6, 3_000_000, Mix::ImageHeavy),
        (7, 20_000, Mix::ImageHeavy),
    ] {
        let (v, st) = gen_bytes(seed, target, mix);
        assert_eq!(v.len() as u64, st.bytes);
        let diff = (st.bytes as i64 - target as i64).abs();
        assert!(diff <= 200, "seed {seed}: {} bytes for {target}", st.bytes);
        assert_eq!(st.lines as usize, v.iter().filter(|&&b| b == b'\n').count());
    }
}

#[test]
fn lines_are_valid_entries() {
    let (v, st) = gen_bytes(11, 12_000_000, Mix::Realistic);
    let entries = check_file(&v, false);
    assert_eq!(entries.len() as u64, st.entries);
    assert_eq!(entries.last().unwrap()["id"].as_str().unwrap(), st.leaf_id);
    assert!(st.images >= 1 && st.branches >= 1 && st.compactions >= 1, "{st:?}");
    let types: HashSet<&str> = entries.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "label",
        "custom",
        "context_edit",
    ] {
        assert!(types.contains(t), "no {t}");
    }
    let (v, _) = gen_bytes(12, 400_000, Mix::SmallEntries);
    check_file(&v, true);
}

#[test]
fn tool_results_answer_calls() {
    let (v, _) = gen_bytes(21, 2_000_000, Mix::Realistic);
    let entries = check_file(&v, false);
    let mut calls = HashSet::new();
    for e in &entries {
        let m = &e["message"];
        if m["role"] == "assistant" {
            for b in m["content"].as_array().unwrap() {
                if b["type"] == "toolCall" {
                    calls.insert(b["id"].as_str().unwrap().to_string());
                }
            }
        } else if m["role"] == "toolResult" {
            assert!(calls.contains(m["toolCallId"].as_str().unwrap()));
        }
    }
}

#[test]
fn compaction_keeps_an_entry_on_the_path() {
    let (v, _) = gen_bytes(31, 3_000_000, Mix::SmallEntries);
    let entries = check_file(&v, true);
    let parent: std::collections::HashMap<&str, &str> = entries
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e["parentId"].as_str()?)))
        .collect();
    let mut n = 0;
    for e in entries.iter().filter(|e| e["type"] == "compaction") {
        let id = e["id"].as_str().unwrap();
        let kept = e["firstKeptEntryId"].as_str().unwrap();
        let mut cur = Some(id);
        let mut found = false;
        while let Some(c) = cur {
            if c == kept {
                found = true;
                break;
            }
            cur = parent.get(c).copied();
        }
        assert!(found, "compaction {id} keeps {kept}, not on its path");
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn numbers_and_dates_format_like_javascript() {
    let f = |v: f64| {
        let mut b = Vec::new();
        put_f64(&mut b, v);
        String::from_utf8(b).unwrap()
    };
    assert_eq!(f(0.0), "0");
    assert_eq!(f(3.0), "3");
    assert_eq!(f(0.013875000000000002), "0.013875000000000002");
    assert_eq!(f(0.000005), "0.000005");
    assert_eq!(f(3e-7), "3e-7");
    assert_eq!(f(1.5e-7), "1.5e-7");
    let mut b = Vec::new();
    put_iso(&mut b, 1_765_233_665_292);
    assert_eq!(b, b"2025-12-08T22:41:05.292Z");
    b.clear();
    put_esc(&mut b, "a\"b\\c\n\t\u{1b}é🚀\u{8}\u{c}\r");
    assert_eq!(b, "a\\\"b\\\\c\\n\\t\\u001bé🚀\\b\\f\\r".as_bytes());
    let u = uuid_v7(1_765_233_665_292, &mut Rng::new(1));
    assert_eq!(u.len(), 36);
    assert_eq!(&u[14..15], "7");
}

#[test]
fn tree_layout() {
    let dir = std::env::temp_dir().join(format!("pi-gen-tree-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let spec = TreeSpec {
        seed: 5,
        sessions: 30,
        folders: 4,
        total_bytes: 3_000_000,
        start_ms: 1_760_000_000_000,
        flavor: Flavor::Pi,
    };
    let st = write_sessions_tree(&spec, &dir).unwrap();
    assert_eq!(st.sessions, 30);
    assert_eq!(st.folders, 4);
    let diff = (st.bytes as i64 - 3_000_000i64).abs();
    assert!(diff < 30 * 300, "{} bytes", st.bytes);
    for f in &st.files {
        let name = f.path.file_name().unwrap().to_str().unwrap();
        assert!(name.ends_with(&format!("_{}.jsonl", f.session_id)));
        let folder = f.path.parent().unwrap().file_name().unwrap().to_str().unwrap();
        assert_eq!(folder, format!("--{}--", f.cwd[1..].replace('/', "-")));
        let meta = fs::metadata(&f.path).unwrap();
        assert_eq!(meta.len(), f.bytes);
        let mtime = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        assert_eq!(mtime, f.modified_ms);
        check_file(&fs::read(&f.path).unwrap(), false);
    }
    fs::remove_dir_all(&dir).unwrap();
}

/// ImageHeavy: the leaf's path carries the images and big outputs (over 80% of the bytes
/// in its messages), with no compaction and few branches.
#[test]
fn image_heavy_context_holds_most_bytes() {
    for seed in [3, 4] {
        let (v, st) = gen_bytes(seed, 12 << 20, Mix::ImageHeavy);
        let entries = check_file(&v, false);
        assert_eq!(st.compactions, 0, "{st:?}");
        assert!(!entries.iter().any(|e| e["type"] == "compaction"));
        assert!(st.images >= 2, "{st:?}");
        let lens: Vec<usize> = v[..v.len() - 1]
            .split(|&b| b == b'\n')
            .skip(1)
            .map(|l| l.len() + 1)
            .collect();
        let mut by_id = std::collections::HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            by_id.insert(e["id"].as_str().unwrap(), i);
        }
        let (mut ctx_bytes, mut ctx_images, mut ctx_messages) = (0usize, 0u64, 0u64);
        let mut cur = by_id.get(st.leaf_id.as_str()).copied();
        while let Some(i) = cur {
            let e = &entries[i];
            if e["type"] == "message" {
                ctx_bytes += lens[i];
                ctx_messages += 1;
                let content = e["message"]["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                ctx_images += content.iter().filter(|b| b["type"] == "image").count() as u64;
            }
            cur = e["parentId"].as_str().and_then(|p| by_id.get(p).copied());
        }
        let share = ctx_bytes as f64 / v.len() as f64;
        assert!(
            share > 0.8,
            "seed {seed}: {share:.3} of the bytes in the context; {st:?}"
        );
        assert!(
            ctx_images >= 2 && ctx_images * 10 >= st.images * 8,
            "{ctx_images} of {} images",
            st.images
        );
        assert!(
            ctx_messages * 2 > st.messages,
            "{ctx_messages} of {} messages",
            st.messages
        );
    }
    // The same mix at the same seed differs from Realistic (the mix is not ignored).
    assert!(gen_bytes(3, 300_000, Mix::ImageHeavy).0 != gen_bytes(3, 300_000, Mix::Realistic).0);
}

/// A generated file never lands on a FIFO or a device: refused without blocking, left as
/// it is; a regular file is emptied and written.
#[test]
fn generated_files_refuse_what_is_not_a_regular_file() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("f.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    assert!(super::create_regular(&fifo).is_err());
    assert!(std::fs::symlink_metadata(&fifo).expect("lstat").file_type().is_fifo());
    let link = dir.path().join("l.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    assert!(super::create_regular(&link).is_err());
    let file = dir.path().join("r.jsonl");
    std::fs::write(&file, "old").expect("write");
    drop(super::create_regular(&file).expect("regular"));
    assert_eq!(std::fs::read(&file).expect("read"), b"");
}

#[test]
fn the_pig_flavor_writes_pigs_blocks_and_none_of_pis() {
    let spec = SessionSpec {
        flavor: Flavor::Pig,
        ..SessionSpec::new(4, 24 << 20)
    };
    let mut v = Vec::new();
    write_session(&spec, &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    for want in [
        "\"type\":\"tool_use\"",
        "\"input\":{",
        "\"media_type\":\"image/png\"}",
        "\"media_type\":\"image/jpeg\",\"url\":\"https://",
        "\"signature\":\"",
    ] {
        assert!(s.contains(want), "no {want}");
    }
    for unwanted in [
        "\"type\":\"toolCall\"",
        "\"arguments\":{",
        "\"mimeType\"",
        "thinkingSignature",
    ] {
        assert!(!s.contains(unwanted), "{unwanted}");
    }
    // pi's flavor keeps pi's blocks.
    let (pi, _) = gen_bytes(4, 24 << 20, Mix::Realistic);
    assert!(String::from_utf8(pi).unwrap().contains("\"type\":\"toolCall\""));
}
