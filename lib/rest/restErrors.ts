/**
 * How the REST server answers a refusal: an HTTP status and a typed body
 * `{ _tag, reason, message, details, errors }` — the slotwise error's own fields, plus Flink's
 * ErrorResponseBody `errors: [message]`. Bad input is a 4xx, never a 500: a schema violation,
 * unparsable JSON or a bad job graph 400, a request without the configured token 401 (with
 * `WWW-Authenticate: Bearer`), a non-loopback Host on a loopback server 403, an unknown
 * path, job or vertex 404 (a path segment not shaped as a JobID or ResourceID too: no route has it),
 * a wrong method 405, an ended job 409,
 * a body too large 413, not JSON 415; a closing cluster 503; a call that outlived its deadline 504.
 */
import { isSlotwiseError, RestError, type SlotwiseError } from '../core/errors.js';

export interface ErrorBody {
  readonly _tag: string;
  readonly reason: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
  readonly errors: readonly string[];
}

/** What ajv reports per violation (with `verbose: true`: the schema and the data). */
interface AjvError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
  readonly parentSchema?: { readonly description?: string };
  readonly data?: unknown;
}

const BAD_INPUT_TAGS: ReadonlySet<string> = new Set([
  'IllegalArgumentError',
  'JobGraphError',
  'ConfigurationError',
  'ResourceProfileError',
]);

/** A short JSON rendering of a value for a message. */
export function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** One line for an ajv violation: where, what is allowed, what came. */
export function describeViolation(context: string, error: AjvError): string {
  const where = `${context}${error.instancePath.replaceAll('/', '.')}`;
  switch (error.keyword) {
    case 'required':
      return `${where} is missing '${String(error.params['missingProperty'])}'`;
    case 'additionalProperties':
      return `${where} has an unknown field '${String(error.params['additionalProperty'])}'`;
    case 'enum':
      return (
        `${where} must be one of ${(error.params['allowedValues'] as unknown[]).map((v) => show(v)).join(', ')}, ` +
        `got ${show(error.data)}`
      );
    case 'pattern':
    case 'minLength':
    case 'maxLength':
      return `${where} must be ${error.parentSchema?.description ?? error.message}, got ${show(error.data)}`;
    case 'type':
      return (
        `${where} must be ${String(error.params['type'])}, ` +
        `got ${error.data === null ? 'null' : Array.isArray(error.data) ? 'an array' : typeof error.data}`
      );
    default:
      return (
        `${where} ${error.message ?? 'is not allowed'}` +
        `${error.data === undefined ? '' : `, got ${show(error.data)}`}`
      );
  }
}

/** The status and body for anything a route threw (or fastify refused before it). */
export function errorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof RestError) return { status: Number(error.details['status'] ?? 400), body: bodyOf(error) };
  if (isSlotwiseError(error)) {
    const status = BAD_INPUT_TAGS.has(error._tag)
      ? 400
      : error._tag === 'IllegalStateError' || error._tag === 'EndpointClosedError'
        ? 503
        : error._tag === 'RpcTimeoutError' || error._tag === 'TimeoutError'
          ? 504
          : 500;
    return { status, body: bodyOf(error) };
  }
  const fastifyError = error as {
    code?: string;
    statusCode?: number;
    validation?: AjvError[];
    validationContext?: string;
    message?: string;
  };
  if (Array.isArray(fastifyError.validation)) {
    const violations = fastifyError.validation.map((v) =>
      describeViolation(fastifyError.validationContext ?? 'request', v),
    );
    // A path whose parameter is not shaped as one (`/jobs/overviewx`, `/jobs/nothex/plan`) names no resource:
    // no route answers it (404), as an unknown path would; the message still says what the segment must be.
    if (fastifyError.validationContext === 'params')
      return {
        status: 404,
        body: bodyOf(
          new RestError('not-found', `no such route: ${violations.join('; ')}`, { status: 404, violations }),
        ),
      };
    return {
      status: 400,
      body: bodyOf(new RestError('bad-request', violations.join('; '), { status: 400, violations })),
    };
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return refusal(
        413,
        'body-too-large',
        `the request body is larger than this server takes (${fastifyError.message ?? ''})`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return refusal(415, 'unsupported-media-type', 'the request body must be JSON (Content-Type: application/json)');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return refusal(400, 'bad-request', `the request body is not valid JSON: ${fastifyError.message ?? ''}`);
  }
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return refusal(fastifyError.statusCode, 'bad-request', fastifyError.message ?? 'bad request');
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    status: 500,
    body: {
      _tag: error instanceof Error ? error.name : 'Error',
      reason: 'internal',
      message,
      details: {},
      errors: [message],
    },
  };
}

function refusal(
  status: number,
  reason: ConstructorParameters<typeof RestError>[0],
  message: string,
): { status: number; body: ErrorBody } {
  return { status, body: bodyOf(new RestError(reason, message, { status })) };
}

function bodyOf(error: SlotwiseError): ErrorBody {
  return {
    _tag: error._tag,
    reason: error.reason,
    message: error.message,
    details: { ...error.details },
    errors: [error.message],
  };
}
