use super::*;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};

/// What a special file is: its type, device number and inode (to see it was not replaced).
fn what(p: &Path) -> (String, u64, u64) {
    let m = std::fs::symlink_metadata(p).expect("lstat");
    let t = m.file_type();
    let kind = if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "dir"
    } else if t.is_symlink() {
        "link"
    } else {
        "file"
    };
    (kind.into(), m.rdev(), m.ino())
}

/// The names in a folder, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A FIFO, a socket, a folder and (as root) a character device `c 1 3` in `d`, by name.
fn specials(d: &Path) -> (Vec<PathBuf>, Option<std::os::unix::net::UnixListener>) {
    let mut v = Vec::new();
    let fifo = d.join("fifo");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o666), 0).expect("mkfifo");
    v.push(fifo);
    let sock = d.join("sock");
    let l = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    v.push(sock);
    let dir = d.join("dir");
    std::fs::create_dir(&dir).expect("mkdir");
    v.push(dir);
    let dev = d.join("dev");
    if null_device(&dev) {
        v.push(dev);
    }
    (v, Some(l))
}

/// A private `/dev/null` (`c 1 3`) at `p`, when this process may make one (root); else
/// says why there is none and returns false.
fn null_device(p: &Path) -> bool {
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        FileType::CharacterDevice,
        Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    );
    if let Err(e) = made {
        eprintln!("files::tests: no character device case ({e}: mknod needs root)");
    }
    made.is_ok()
}

#[test]
fn temp_names_never_end_in_jsonl_and_are_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let place = Place::of(&dir.path().join("s.jsonl")).expect("place");
    let (name, f) = place.temp(0o600).expect("temp");
    let name = name.to_string_lossy().into_owned();
    assert!(name.starts_with(".pi-session-tmp-"), "{name}");
    assert!(name.ends_with("-s.jsonl.tmp"), "{name}");
    assert_eq!(f.metadata().expect("stat").permissions().mode() & 0o777, 0o600);
}

#[test]
fn the_sweep_removes_dead_writers_temps_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // pid 0x7fff_fff0 exists nowhere (pid_max is at most 2^22).
    let dead_new = d.join(".pi-session-tmp-2147483632-abc-s.jsonl.tmp");
    let dead_old = d.join(".pi-session-tmp-2147483632-abc-s.jsonl");
    let mine = d.join(format!(".pi-session-tmp-{}-abc-s.jsonl.tmp", std::process::id()));
    let alive = d.join(".pi-session-tmp-1-abc-s.jsonl.tmp"); // init
    let session = d.join("s.jsonl");
    for p in [&dead_new, &dead_old, &mine, &alive, &session] {
        std::fs::write(p, b"x").expect("write");
    }
    let link = d.join(".pi-session-tmp-2147483632-link.tmp");
    std::os::unix::fs::symlink(&session, &link).expect("symlink");
    let fifo = d.join(".pi-session-tmp-2147483632-fifo.tmp");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
    sweep_stale_temps(d);
    assert!(!dead_new.exists() && !dead_old.exists());
    assert!(mine.exists() && alive.exists() && session.exists());
    assert!(std::fs::symlink_metadata(&link).is_ok(), "only plain files are removed");
    assert_eq!(what(&fifo).0, "fifo", "only plain files are removed");
    // Untouched for over a minute: removed whatever the pid.
    let f = std::fs::File::options().write(true).open(&alive).expect("open");
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
        .expect("mtime");
    sweep_stale_temps(d);
    assert!(!alive.exists() && mine.exists());
}

#[test]
fn a_whole_file_keeps_the_mode_and_is_written_through_symlinks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("dir");
    let target = real.join("t.jsonl");
    std::fs::write(&target, b"old\n").expect("write");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let link = dir.path().join("t.jsonl");
    std::os::unix::fs::symlink("real/t.jsonl", &link).expect("symlink");
    write_whole(&link, Whole::SESSION, &[b"new\n"]).expect("write");
    assert_eq!(what(&link).0, "link");
    assert_eq!(std::fs::read(&target).expect("read"), b"new\n");
    assert_eq!(
        std::fs::metadata(&target).expect("stat").permissions().mode() & 0o7777,
        0o640
    );
    assert_eq!(names(&real), ["t.jsonl"], "no temporary file stays");
    // A dangling link: the file it names is created, the link stays.
    let dangling = dir.path().join("d.jsonl");
    std::os::unix::fs::symlink("real/new.jsonl", &dangling).expect("symlink");
    write_whole(&dangling, Whole::OUTPUT, &[b"x"]).expect("write");
    assert_eq!(what(&dangling).0, "link");
    assert_eq!(std::fs::read(real.join("new.jsonl")).expect("read"), b"x");
    // A dropped write leaves nothing.
    let mut p = Pending::new(&target, Whole::SESSION).expect("pending");
    p.file().write_all(b"never").expect("write");
    drop(p);
    assert_eq!(std::fs::read(&target).expect("read"), b"new\n");
    assert_eq!(names(&real), ["new.jsonl", "t.jsonl"]);
}

/// Every writer of the module against a FIFO, a socket, a folder and a device, named
/// directly and through a symlink: refused, each left as it was, nothing beside it.
#[test]
fn what_is_not_a_regular_file_is_never_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (specials, _listener) = specials(d);
    for s in &specials {
        let link = d.join(format!("link-{}", s.file_name().expect("name").to_string_lossy()));
        std::os::unix::fs::symlink(s, &link).expect("symlink");
    }
    let before: Vec<_> = specials.iter().map(|s| what(s)).collect();
    let listing = names(d);
    for s in &specials {
        let name = s.file_name().expect("name").to_string_lossy().into_owned();
        let link = d.join(format!("link-{name}"));
        for target in [s, &link] {
            let e = write_whole(target, Whole::SESSION, &[b"x\n"]).expect_err("refused");
            let text = e.to_string();
            assert!(
                text.contains("not a regular file") || e.raw_os_error() == Some(libc::EISDIR),
                "{name}: {text}"
            );
            assert!(write_whole(target, Whole::CACHE, &[b"x\n"]).is_err(), "{name}");
            assert!(create_exclusive(target, b"x\n").is_err(), "{name}");
            assert!(open_append(target, true).is_err(), "{name}");
            assert!(remove(target).is_err(), "{name}");
            let tmp = d.join("tmp-file");
            std::fs::write(&tmp, b"t").expect("write");
            assert!(rename_over(&tmp, target).is_err(), "{name}");
            std::fs::remove_file(&tmp).expect("rm");
        }
    }
    let after: Vec<_> = specials.iter().map(|s| what(s)).collect();
    assert_eq!(before, after);
    assert_eq!(names(d), listing, "nothing left beside them");
}

/// A name that becomes a FIFO while the file is written is not renamed over.
#[test]
fn a_special_file_put_there_during_the_write_is_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("s.jsonl");
    std::fs::write(&target, b"old\n").expect("write");
    let mut p = Pending::new(&target, Whole::SESSION).expect("pending");
    p.file().write_all(b"new\n").expect("write");
    std::fs::remove_file(&target).expect("rm");
    rustix::fs::mknodat(rustix::fs::CWD, &target, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
    let e = p.commit().expect_err("refused");
    assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");
    assert_eq!(what(&target).0, "fifo");
    assert_eq!(names(dir.path()), ["s.jsonl"]);
}

#[test]
fn outputs_stream_into_fifos_and_devices_and_replace_regular_files_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A FIFO with a reader on the other end: streamed into, still a FIFO.
    let fifo = d.join("out");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
    let id = what(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).expect("read"))
    };
    let mut o = OutputFile::create(&fifo).expect("open");
    assert!(o.is_streamed() && !o.is_terminal() && o.target().is_none());
    o.write_all(b"hello\n").expect("write");
    o.finish().expect("finish");
    assert_eq!(reader.join().expect("reader"), b"hello\n");
    assert_eq!(what(&fifo), id);
    // A regular file: replaced whole, through a link, its mode kept.
    let file = d.join("f.md");
    std::fs::write(&file, b"old").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o604)).expect("chmod");
    let link = d.join("l.md");
    std::os::unix::fs::symlink("f.md", &link).expect("link");
    let mut o = OutputFile::create(&link).expect("open");
    assert!(!o.is_streamed());
    assert_eq!(o.target(), Some(d.join("f.md")));
    o.write_all(b"new").expect("write");
    assert_eq!(std::fs::read(&file).expect("read"), b"old", "nothing until finished");
    o.finish().expect("finish");
    assert_eq!(std::fs::read(&file).expect("read"), b"new");
    assert_eq!(
        std::fs::metadata(&file).expect("stat").permissions().mode() & 0o777,
        0o604
    );
    assert_eq!(what(&link).0, "link");
    // A folder, a socket: refused.
    let sock = d.join("sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    let e = OutputFile::create(&sock).expect_err("socket");
    assert!(e.to_string().contains("not a regular file (a socket)"), "{e}");
    assert_eq!(
        OutputFile::create(d).expect_err("dir").raw_os_error(),
        Some(libc::EISDIR)
    );
    let mut left = names(d);
    left.retain(|n| n.starts_with(".pi-session-tmp-"));
    assert!(left.is_empty(), "{left:?}");
    // A private character device `c 1 3` (root only): written to, still the device.
    let dev = d.join("null");
    if null_device(&dev) {
        let id = what(&dev);
        let mut o = OutputFile::create(&dev).expect("open");
        assert!(o.is_streamed());
        o.write_all(&[b'x'; 100_000]).expect("write");
        o.finish().expect("finish");
        assert_eq!(what(&dev), id);
    }
}

#[test]
fn descriptors_are_recognised_by_name() {
    assert_eq!(output_descriptor("/dev/stdout"), Some(1));
    assert_eq!(output_descriptor("/dev/stderr"), Some(2));
    assert_eq!(output_descriptor("/dev/fd/63"), Some(63));
    assert_eq!(output_descriptor("/proc/self/fd/5"), Some(5));
    assert_eq!(
        output_descriptor(&format!("/proc/{}/fd/7", std::process::id())),
        Some(7)
    );
    assert_eq!(output_descriptor("/proc/1/fd/7"), None);
    assert_eq!(output_descriptor("/dev/fd/x"), None);
    assert_eq!(output_descriptor("/tmp/dev/fd/1"), None);
}

fn output_descriptor(p: &str) -> Option<i32> {
    output::descriptor_named(Path::new(p))
}
