/** Errors in the OpenAI API's own shape: {"error": {"message", "type", "param", "code"}}. */
export class OpenAIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'OpenAIError';
  }

  toJSON() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** The type and message OpenAI uses for a given status, for `sim.error_status`. */
export function upstreamError(status: number, message?: string): OpenAIError {
  switch (status) {
    case 400:
      return new OpenAIError(400, message ?? 'Simulated bad request.', 'invalid_request_error');
    case 401:
      return new OpenAIError(
        401,
        message ?? 'Incorrect API key provided.',
        'invalid_request_error',
        null,
        'invalid_api_key',
      );
    case 403:
      return new OpenAIError(
        403,
        message ?? 'You are not allowed to sample from this model.',
        'invalid_request_error',
      );
    case 404:
      return new OpenAIError(
        404,
        message ?? 'The model does not exist or you do not have access to it.',
        'invalid_request_error',
        null,
        'model_not_found',
      );
    case 429:
      return new OpenAIError(
        429,
        message ?? 'Rate limit reached for requests.',
        'requests',
        null,
        'rate_limit_exceeded',
      );
    case 503:
      return new OpenAIError(
        503,
        message ?? 'The engine is currently overloaded, please try again later.',
        'server_error',
      );
    default:
      return status >= 500
        ? new OpenAIError(
            status,
            message ?? 'The server had an error while processing your request. Sorry about that!',
            'server_error',
          )
        : new OpenAIError(status, message ?? `Simulated error ${status}.`, 'invalid_request_error');
  }
}
