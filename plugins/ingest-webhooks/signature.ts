/**
 * Source-control webhook signatures: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw
 * body>` with the shared secret. Compared in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureCheck = 'ok' | 'missing' | 'invalid';

export function checkSignature(secret: string, body: Buffer, header: string | undefined): SignatureCheck {
  if (!header) return 'missing';
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  const expected = createHmac('sha256', secret).update(body).digest();
  // Compare a fixed-length value even for a malformed header, so timing says nothing.
  const given = m ? Buffer.from(m[1]!, 'hex') : Buffer.alloc(expected.length);
  const equal = timingSafeEqual(given, expected);
  return m && equal ? 'ok' : 'invalid';
}

export function sign(secret: string, body: Buffer | string): string {
  return 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
}
