//! pi's `getTree()`: entries as a forest, children sorted by timestamp.
//!
//! Mirrors pi exactly, including its odd corners: a node is the `byId` slot of an id, so
//! duplicate ids make one node appear in several places; an entry is a root when its
//! `parentId` is `null`, equals its own id, or names no entry; children are sorted with
//! V8's own `Array.prototype.sort` (TimSort) on `new Date(timestamp).getTime()`
//! differences, which matters when timestamps are invalid (NaN). Everything is iterative:
//! a chain a million entries deep is fine. A cycle reachable from a root (pi loops
//! forever there) is reported as [`ErrorKind::ParentCycle`].

use crate::error::{ErrorKind, Result, Walk};
use crate::index::EntryPos;
use crate::js::string::JsStr;
use crate::json::value::{Object, Value, js_date_time};
use crate::session::Session;

/// The forest: node ids are entry positions (the `byId` slot of each id).
#[derive(Debug, Clone)]
pub struct Tree {
    /// Root nodes in file order (a node may repeat when ids do).
    pub roots: Vec<EntryPos>,
    /// Children of every node, stored contiguously: node `p` owns
    /// `kids[ranges[p].0 .. ranges[p].0 + ranges[p].1]`.
    ranges: Vec<(u32, u32)>,
    kids: Vec<EntryPos>,
}

impl Tree {
    /// Children of a node, sorted as pi sorts them.
    pub fn children(&self, node: EntryPos) -> &[EntryPos] {
        match self.ranges.get(node.0 as usize) {
            Some(&(start, len)) => &self.kids[start as usize..(start + len) as usize],
            None => &[],
        }
    }

    fn children_mut(&mut self, node: EntryPos) -> &mut [EntryPos] {
        let (start, len) = self.ranges[node.0 as usize];
        &mut self.kids[start as usize..(start + len) as usize]
    }

    /// Preorder walk: `(depth, node)`.
    pub fn preorder(&self) -> Vec<(usize, EntryPos)> {
        let mut out = Vec::new();
        let mut stack: Vec<(usize, EntryPos)> = self.roots.iter().rev().map(|&r| (0, r)).collect();
        while let Some((d, n)) = stack.pop() {
            out.push((d, n));
            for &c in self.children(n).iter().rev() {
                stack.push((d + 1, c));
            }
        }
        out
    }
}

impl Session {
    /// pi's `getTree()`.
    ///
    /// # Errors
    /// [`ErrorKind::ParentCycle`] when a cycle is reachable from a root,
    /// [`ErrorKind::FileChanged`].
    pub fn tree(&self) -> Result<Tree> {
        let t = self.tree_unchecked()?;
        // Timestamps that order siblings are read leniently (NaN when they do not parse):
        // only an unchanged file makes the tree an answer.
        self.check()?;
        Ok(t)
    }

    fn tree_unchecked(&self) -> Result<Tree> {
        let bytes = self.check()?;
        let n = self.index.len();
        // Each entry's node and parent node (u32::MAX: a root).
        const ROOT: u32 = u32::MAX;
        let mut links: Vec<(u32, u32)> = Vec::with_capacity(self.list.len());
        let mut counts = vec![0u32; n];
        let mut roots = Vec::new();
        let parents = self.links();
        for &p in &self.list {
            let node = if parents.unique {
                p
            } else {
                self.entry_by_id(self.record(p).id)
                    .expect("every entry's id is in byId")
            };
            let parent = parents.tree_parent(p);
            match parent {
                Some(parent) => {
                    counts[parent.0 as usize] += 1;
                    links.push((node.0, parent.0));
                }
                None => {
                    roots.push(node);
                    links.push((node.0, ROOT));
                }
            }
        }
        let mut ranges = Vec::with_capacity(n);
        let mut at = 0u32;
        for &c in &counts {
            ranges.push((at, 0u32));
            at += c;
        }
        let mut kids = vec![EntryPos(0); at as usize];
        for &(node, parent) in &links {
            if parent != ROOT {
                let r = &mut ranges[parent as usize];
                kids[(r.0 + r.1) as usize] = EntryPos(node);
                r.1 += 1;
            }
        }
        // Only the tree is kept: the links and counts go before the checks and the sort.
        drop(links);
        drop(counts);
        let mut tree = Tree { roots, ranges, kids };
        // With distinct ids every node is one entry with one parent: the tree is a forest,
        // where no cycle is reachable from a root (going up from any node reached leads
        // back to its root) and nothing is reached twice. Only duplicate ids need the
        // checks.
        if !parents.unique {
            self.tree_cycle(&tree)?;
            self.tree_size_guard(&tree)?;
        }
        // Sort as pi does: pop a node, sort its children, push them (a node reached twice
        // is sorted twice, as in pi).
        // Timestamps are read only for siblings (allocated at the first fork).
        let mut times: Vec<f64> = Vec::new();
        let mut known: Vec<bool> = Vec::new();
        // Roots last to first, each subtree depth first: the order of a stack of all roots.
        let mut stack: Vec<EntryPos> = Vec::new();
        for r in (0..tree.roots.len()).rev() {
            stack.push(tree.roots[r]);
            while let Some(node) = stack.pop() {
                let kids = tree.children_mut(node);
                if kids.len() > 1 {
                    if times.is_empty() {
                        times = vec![f64::NAN; n];
                        known = vec![false; n];
                    }
                    for &k in kids.iter() {
                        let i = k.0 as usize;
                        if !known[i] {
                            known[i] = true;
                            times[i] = js_date_time(self.timestamp_in(bytes, k).as_ref());
                        }
                    }
                    let mut v = kids.to_vec();
                    crate::js::sort::v8_sort_by(&mut v, |a, b| times[a.0 as usize] - times[b.0 as usize]);
                    kids.copy_from_slice(&v);
                }
                stack.extend_from_slice(tree.children(node));
            }
        }
        Ok(tree)
    }

    /// Duplicate ids can make one node the child of many: the tree pi builds (and walks,
    /// and prints) is then a DAG expanded into a tree, which can grow exponentially. Count
    /// the occurrences first (memoised over the DAG) and refuse beyond a generous budget.
    fn tree_size_guard(&self, tree: &Tree) -> Result<()> {
        let n = self.index.len();
        let budget = 4 * n as u64 + 1_000_000;
        let mut occ = vec![0u64; n];
        let mut total = 0u64;
        for &root in &tree.roots {
            let mut stack: Vec<(EntryPos, usize)> = vec![(root, 0)];
            while let Some(top) = stack.last_mut() {
                let (node, i) = *top;
                if occ[node.0 as usize] != 0 {
                    stack.pop();
                    continue;
                }
                let kids = tree.children(node);
                if i < kids.len() {
                    top.1 += 1;
                    if occ[kids[i].0 as usize] == 0 {
                        stack.push((kids[i], 0));
                    }
                    continue;
                }
                let sum = kids.iter().fold(1u64, |acc, k| acc.saturating_add(occ[k.0 as usize]));
                occ[node.0 as usize] = sum;
                stack.pop();
            }
            total = total.saturating_add(occ[root.0 as usize]);
            if total > budget {
                return Err(ErrorKind::TreeExplodes {
                    occurrences: total,
                    entries: self.list.len(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// The oracle's cycle guard: depth-first from the roots, a child already on the stack
    /// is a cycle.
    fn tree_cycle(&self, tree: &Tree) -> Result<()> {
        let mut state = vec![0u8; self.index.len()];
        for &root in &tree.roots {
            if state[root.0 as usize] == 2 {
                continue;
            }
            let mut stack: Vec<(EntryPos, usize)> = vec![(root, 0)];
            state[root.0 as usize] = 1;
            while let Some(top) = stack.last_mut() {
                let (node, i) = *top;
                let kids = tree.children(node);
                if i >= kids.len() {
                    state[node.0 as usize] = 2;
                    stack.pop();
                    continue;
                }
                top.1 += 1;
                let child = kids[i];
                match state[child.0 as usize] {
                    1 => {
                        let id_json = match self.id_value(child) {
                            None => "null".to_string(),
                            Some(v) => crate::json::stringify::stringify(&v),
                        };
                        return Err(ErrorKind::ParentCycle {
                            walk: Walk::GetTree,
                            entry: child,
                            line: self.record(child).line,
                            byte: self.record(child).offset,
                            id_json,
                        }
                        .into());
                    }
                    2 => continue,
                    _ => {
                        state[child.0 as usize] = 1;
                        stack.push((child, 0));
                    }
                }
            }
        }
        Ok(())
    }

    /// One tree node as the oracle prints it: `{id, type, label, labelTimestamp}` (without
    /// children); members that are `undefined` in pi are left out.
    pub(crate) fn node_value(&self, node: EntryPos) -> Result<Object<'_>> {
        let mut o = Object::new();
        if let Some(id) = self.id_value(node) {
            o.set(JsStr::from_str("id"), id);
        }
        if let Some(t) = self.type_value(node) {
            o.set(JsStr::from_str("type"), t);
        }
        let (label, ts) = match self.label_entry(self.record(node).id) {
            Some(l) => {
                let mut v = self.value(l)?;
                match &mut v {
                    Value::Object(lo) => (lo.remove("label"), lo.remove("timestamp")),
                    _ => (None, None),
                }
            }
            None => (None, None),
        };
        o.set(JsStr::from_str("label"), label.unwrap_or(Value::Null));
        o.set(JsStr::from_str("labelTimestamp"), ts.unwrap_or(Value::Null));
        Ok(o)
    }

    /// The tree as the oracle's nested JSON: `[{id, type, label, labelTimestamp, children}]`.
    ///
    /// # Errors
    /// As [`Session::tree`].
    pub fn tree_nested(&self) -> Result<Value<'_>> {
        let tree = self.tree()?;
        struct Frame<'a> {
            node: EntryPos,
            next: usize,
            kids: Vec<Value<'a>>,
        }
        let mut out = Vec::with_capacity(tree.roots.len());
        for &root in &tree.roots {
            let mut stack = vec![Frame {
                node: root,
                next: 0,
                kids: Vec::new(),
            }];
            while let Some(top) = stack.last_mut() {
                let kids = tree.children(top.node);
                if top.next < kids.len() {
                    let c = kids[top.next];
                    top.next += 1;
                    stack.push(Frame {
                        node: c,
                        next: 0,
                        kids: Vec::new(),
                    });
                    continue;
                }
                let f = stack.pop().expect("non-empty");
                let mut o = self.node_value(f.node)?;
                o.set(JsStr::from_str("children"), Value::Array(f.kids));
                let v = Value::Object(o);
                match stack.last_mut() {
                    Some(parent) => parent.kids.push(v),
                    None => out.push(v),
                }
            }
        }
        Ok(Value::Array(out))
    }

    /// The tree as the oracle's flat preorder list `[{depth, id, type, label, labelTimestamp}]`.
    ///
    /// # Errors
    /// As [`Session::tree`].
    pub fn tree_flat(&self) -> Result<Value<'_>> {
        let tree = self.tree()?;
        let mut out = Vec::new();
        for (depth, node) in tree.preorder() {
            let mut o = self.node_value(node)?;
            o.set(JsStr::from_str("depth"), Value::Number(depth as f64));
            out.push(Value::Object(o));
        }
        Ok(Value::Array(out))
    }
}
