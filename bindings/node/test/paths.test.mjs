// pi's paths come from the library (normalizePath, resolvePath, the project folder): a
// `file://` URL becomes a path as node's own `fileURLToPath` makes it, which pi calls.
// Each URL here goes through both; the path, or the kind of error, must be the same.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { ours, outcome, pi } from './common.mjs'
import { scratch } from './scratch.mjs'

const native = createRequire(import.meta.url)('../native.js')

const URLS = [
  'file:///a/b.jsonl',
  'file:///a%20b/c',
  'file:///caf%C3%A9/%F0%9F%98%80',
  'file:///café dir/x y',
  'file://localhost/x',
  'file://LOCALHOST/x',
  'file://localhost',
  'file://',
  'file:///',
  'file:////x',
  'file:///a/./b/../c',
  'file:///a/%2e/b/%2E%2e/c',
  'file:///a/b/..',
  'file:///a/b/.',
  'file:///../../a',
  'file:///a?query#frag',
  'file:///a#frag?query',
  'file:///a\\b\\c',
  'file:///a\tb\nc\rd',
  'file:///trailing space ',
  'file:///%25',
  'file:///a%2Fb',
  'file:///a%2fb',
  'file:///a%zz',
  'file:///a%E0%A4%A',
  'file:///a%',
  'file://example.com/a',
  'file://ex%41mple.com/a',
  'file://a b/c',
  'file://[::1]/a',
  'file://local%68ost/a',
  'file://C|/x',
  'file://c:/x',
]

/** The path, or what kind of error (node's code, else its class). */
function kind(f) {
  try {
    return { path: f() }
  } catch (e) {
    const coded = /^TypeError \[(\w+)\]: /.exec(e?.message)
    if (coded) return { error: coded[1] }
    const named = /^(\w*Error): /.exec(e?.message)
    return { error: named ? named[1] : (e.code ?? e.name) }
  }
}

test('file:// URLs become the paths node makes of them', () => {
  for (const url of URLS) {
    assert.deepStrictEqual(kind(() => native.normalizePath(url)), kind(() => fileURLToPath(url)), JSON.stringify(url))
  }
})

test('random file:// URLs become the paths node makes of them', () => {
  // Pieces that the URL parser and fileURLToPath treat specially, in random order.
  const pieces = ['/', '\\', '.', '..', '%2e', '%2E', '%2f', '%41', '%', '%zz', '%C3%A9', '%E0', '?', '#', ' ', '\t', '\n', 'a', 'é', '😀', 'localhost', 'LocalHost', 'host', '[::1]', 'c:', 'C|', '@', ':', '~']
  let seed = 12345
  const next = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  }
  for (let i = 0; i < 3000; i++) {
    let url = 'file://'
    const len = 1 + next(8)
    for (let k = 0; k < len; k++) url += pieces[next(pieces.length)]
    assert.deepStrictEqual(kind(() => native.normalizePath(url)), kind(() => fileURLToPath(url)), JSON.stringify(url))
  }
})

test('a session opened by a file:// URL is the one pi opens', () => {
  const root = scratch('pi-url-')
  for (const tail of ['s.jsonl', 'sub%20dir/s%C3%A9.jsonl', 'a/../b/s.jsonl']) {
    const url = `file://${root}/${tail}`
    const theirs = outcome(() => pi.SessionManager.open(url).getSessionFile())
    const mine = outcome(() => ours.SessionManager.open(url).getSessionFile())
    assert.deepStrictEqual(mine, theirs, url)
  }
  const bad = outcome(() => pi.SessionManager.open('file://example.com/s.jsonl'))
  const ourBad = outcome(() => ours.SessionManager.open('file://example.com/s.jsonl'))
  assert.equal(ourBad.error, bad.error)
})
