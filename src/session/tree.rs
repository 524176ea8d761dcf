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
    /// `kids[starts[p] .. starts[p + 1]]` (8 bytes an entry in all).
    starts: Vec<u32>,
    kids: Vec<EntryPos>,
}

impl Tree {
    /// Children of a node, sorted as pi sorts them.
    pub fn children(&self, node: EntryPos) -> &[EntryPos] {
        let p = node.0 as usize;
        match (self.starts.get(p), self.starts.get(p + 1)) {
            (Some(&start), Some(&end)) => &self.kids[start as usize..end as usize],
            _ => &[],
        }
    }

    fn children_mut(&mut self, node: EntryPos) -> &mut [EntryPos] {
        let p = node.0 as usize;
        let (start, end) = (self.starts[p], self.starts[p + 1]);
        &mut self.kids[start as usize..end as usize]
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

    /// How many roots [`Session::tree`] gives, with its errors. When no two entries
    /// share an id (every session pi writes) the tree cannot fail and its roots are the
    /// entries without a tree parent: they are counted without building the tree (its
    /// children lists cost 8 bytes an entry).
    ///
    /// # Errors
    /// As [`Session::tree`].
    pub fn tree_root_count(&self) -> Result<usize> {
        let parents = self.links();
        if !parents.unique {
            return self.tree().map(|t| t.roots.len());
        }
        let n = self.list.iter().filter(|&p| parents.tree_parent(p).is_none()).count();
        self.check()?;
        Ok(n)
    }

    fn tree_unchecked(&self) -> Result<Tree> {
        let bytes = self.check()?;
        let n = self.index.len();
        let parents = self.links();
        // Each entry's node (its id's `byId` slot) and parent node, in two passes over the
        // entries (nothing per entry is kept between them): count each node's children,
        // then place them, last to first, each at the end of its node's range.
        let node_of = |p: EntryPos| {
            if parents.unique {
                p
            } else {
                self.entry_by_id(self.record(p).id)
                    .expect("every entry's id is in byId")
            }
        };
        // `starts[q + 1]` counts the children of q, then (summed) ends q's range.
        let mut starts = vec![0u32; n + 1];
        let mut roots = Vec::new();
        for p in self.list.iter() {
            match parents.tree_parent(p) {
                Some(parent) => starts[parent.0 as usize + 1] += 1,
                None => roots.push(node_of(p)),
            }
        }
        for q in 1..starts.len() {
            starts[q] += starts[q - 1];
        }
        let mut kids = vec![EntryPos(0); starts[n] as usize];
        for p in self.list.iter().rev() {
            if let Some(parent) = parents.tree_parent(p) {
                let end = &mut starts[parent.0 as usize + 1];
                *end -= 1;
                kids[*end as usize] = node_of(p);
            }
        }
        // Each range's end moved down to its start: shift back by one node.
        starts.copy_within(1.., 0);
        starts[n] = kids.len() as u32;
        let mut tree = Tree { roots, starts, kids };
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
        // Timestamps are read only for siblings, beside them while they are sorted.
        let mut v: Vec<(EntryPos, f64)> = Vec::new();
        // Roots last to first, each subtree depth first: the order of a stack of all roots.
        let mut stack: Vec<EntryPos> = Vec::new();
        for r in (0..tree.roots.len()).rev() {
            stack.push(tree.roots[r]);
            while let Some(node) = stack.pop() {
                let kids = tree.children_mut(node);
                if kids.len() > 1 {
                    v.clear();
                    v.extend(
                        kids.iter()
                            .map(|&k| (k, js_date_time(self.timestamp_in(bytes, k).as_ref()))),
                    );
                    crate::js::sort::v8_sort_by(&mut v, |a, b| a.1 - b.1);
                    for (k, &(e, _)) in kids.iter_mut().zip(&v) {
                        *k = e;
                    }
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
