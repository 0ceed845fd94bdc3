// origin.mjs starts http-cache-tests' origin server (SUITE_DIR/server/
// server.mjs) bound to 127.0.0.1 only: the suite's server listens on every
// interface, so listen() is wrapped to add the loopback host. The port
// comes from npm_config_port (0: any free port); the server prints
// "Listening on http://127.0.0.1:PORT/", and this wrapper adds "cache-tests
// listening on http://127.0.0.1:PORT" for the e2e harness.
// Usage: npm_config_port=0 npm_config_protocol=http npm_config_pidfile=F node origin.mjs SUITE_DIR
import http from 'http'
import path from 'path'
import { pathToFileURL } from 'url'

const listen = http.Server.prototype.listen
http.Server.prototype.listen = function (port, ...rest) {
  if (typeof port === 'number' || typeof port === 'string') {
    this.once('listening', () => {
      console.log(`cache-tests listening on http://127.0.0.1:${this.address().port}`)
    })
    return listen.call(this, Number(port), '127.0.0.1', ...rest)
  }
  return listen.call(this, port, ...rest)
}
await import(pathToFileURL(path.join(process.argv[2], 'server', 'server.mjs')).href)
