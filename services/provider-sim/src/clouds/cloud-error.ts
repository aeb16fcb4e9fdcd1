import type { ServerResponse } from 'node:http';

/** An error answer in a cloud's own shape: status, JSON body and extra headers (Bedrock's error type). */
export class CloudError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
    this.name = 'CloudError';
  }

  send(res: ServerResponse): void {
    const text = JSON.stringify(this.body);
    res.writeHead(this.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...this.headers,
    });
    res.end(text);
  }
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** A Google API error (`{"error": {"code", "message", "status", "details"?}}`). */
export const googleError = (code: number, message: string, reason?: string): CloudError =>
  new CloudError(code, {
    error: {
      code,
      message,
      status: GOOGLE_STATUS[code] ?? (code >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
      ...(reason
        ? {
            details: [
              { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' },
            ],
          }
        : {}),
    },
  });

const AWS_TYPE: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

/** An AWS JSON error: `{"message"}` with the type in `x-amzn-ErrorType`. */
export const awsError = (
  status: number,
  message: string,
  type = AWS_TYPE[status] ?? 'InternalServerException',
) =>
  new CloudError(
    status,
    { message },
    { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  );

/** An Azure OpenAI error (`{"error": {"code", "message"}}`). */
export const azureError = (status: number, message: string) =>
  new CloudError(status, { error: { code: String(status), message } });
