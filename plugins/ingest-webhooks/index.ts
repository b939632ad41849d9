/**
 * Inbound events: source-control webhooks (`/webhook_a/events`, optional HMAC signature check
 * with `webhooks.secret`) and event-bus deliveries (`/bus_events`), stored as events.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { badRequest } from '../../kernel/errors.js';
import type { IngestDecoded } from '../../kernel/extension-points.js';
import { decodeBusEvents } from './bus.js';
import { checkSignature } from './signature.js';
import { deliveryToEvent } from './source-control.js';

const accepted = (n: number) => () => ({ status: 200, contentType: 'application/json', body: JSON.stringify({ accepted: n }) });

export default definePlugin({
  name: 'ingest-webhooks',
  description: 'Source-control webhooks and event-bus deliveries as events.',
  register(ctx) {
    const secret = ctx.config.webhooks.secret;
    ctx.extensions.receiver({
      name: 'webhooks',
      routes: [
        {
          path: '/webhook_a/events',
          auth: 'svc',
          contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
          decode(req): IngestDecoded {
            if (secret) {
              const raw = req.headers['x-hub-signature-256'];
              const check = checkSignature(secret, req.body, Array.isArray(raw) ? raw[0] : raw);
              if (check === 'missing') throw badRequest('missing X-Hub-Signature-256 header (webhooks.secret is configured)');
              if (check === 'invalid') throw badRequest('invalid X-Hub-Signature-256: the HMAC-SHA256 of the body does not match webhooks.secret');
            }
            return { batch: { events: [deliveryToEvent(req.body, req.contentType, req.headers)] }, respond: accepted(1) };
          },
        },
        {
          path: '/bus_events',
          auth: 'svc',
          // SPEC.md: JSON only; anything else is 400 "unsupported content type".
          contentTypes: ['application/json'],
          decode(req): IngestDecoded {
            const events = decodeBusEvents(req.body);
            return { batch: { events }, respond: accepted(events.length) };
          },
        },
      ],
    });
  },
});
