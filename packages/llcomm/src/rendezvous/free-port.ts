/**
 * A port the OS says is free on `host`: listen on port 0, read the port, close. Another process may take it
 * before the rendezvous host listens (the host then fails with INVALID_ARGUMENT naming EADDRINUSE); the
 * launcher and the tests accept that small window, as torchrun does with its free-port probe.
 */
import { createServer } from 'node:net'

export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}
