// summary.mjs: reads the JSON results of http-cache-tests' CLI (stdin) and
// prints, as JSON, per suite: the required tests (kind "required" or no
// kind; browser-only tests left out), how many passed (a test whose
// dependency did not pass does not count, as the suite's own display
// shows it), and each failing required test with its reason.
// Usage: node summary.mjs SUITE_DIR < results.json
import { readFileSync } from 'fs'
import { pathToFileURL } from 'url'
import path from 'path'

const dir = process.argv[2]
const load = async f => (await import(pathToFileURL(path.join(dir, f)).href)).default
const suites = await load('tests/index.mjs')
suites.push(await load('tests/surrogate-control.mjs'))
const results = JSON.parse(readFileSync(0, 'utf8'))

const byId = new Map()
for (const s of suites) for (const t of s.tests) byId.set(t.id, t)

// passed mirrors the suite's display: a pass (or a check's "yes") needs
// the test's result to be true and every dependency to have passed.
function passed (id) {
  const t = byId.get(id)
  return results[id] === true && (t.depends_on || []).every(passed)
}

function reason (id) {
  const t = byId.get(id)
  for (const dep of t.depends_on || []) {
    if (!passed(dep)) return `dependency ${dep} did not pass`
  }
  const r = results[id]
  if (r === undefined) return 'not run'
  return Array.isArray(r) ? `${r[0]}: ${r[1]}` : String(r)
}

const out = { suites: [], required: 0, passed: 0 }
for (const s of suites) {
  const req = s.tests.filter(t => !t.browser_only && (t.kind === undefined || t.kind === 'required'))
  if (req.length === 0) continue
  const failing = req.filter(t => !passed(t.id)).map(t => ({ id: t.id, name: t.name, reason: reason(t.id) }))
  out.suites.push({ id: s.id, name: s.name, required: req.length, passed: req.length - failing.length, failing })
  out.required += req.length
  out.passed += req.length - failing.length
}
console.log(JSON.stringify(out, null, 1))
