/**
 * Incoming params checked with the SDK's schemas (v2 `@modelcontextprotocol/core`) before dispatch.
 * Only the verdict is used: the raw request is what the gateway forwards (core schemas strip fields
 * such as `inputResponses`, ../shared/spec/sdk.md §2.2). Schemas are built once, at import.
 */
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  DiscoverRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/core';
import { invalidParams } from '../../errors.js';
import { resourceUriError } from '../resource-uri.js';

type Schema = { safeParse(v: unknown): { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } };

const SCHEMAS: Readonly<Record<string, Schema>> = {
  'server/discover': DiscoverRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'prompts/list': ListPromptsRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'tools/call': CallToolRequestSchema,
  'prompts/get': GetPromptRequestSchema,
  'resources/read': ReadResourceRequestSchema,
  'completion/complete': CompleteRequestSchema,
};

/**
 * Throws -32602 naming the first problem when `params` do not fit `method`'s request schema, or when a
 * `resources/read` uri is not an absolute URI (../resource-uri.ts).
 */
export function checkRequestParams(method: string, params: Record<string, unknown>): void {
  if (!Object.hasOwn(SCHEMAS, method)) return;
  const schema = SCHEMAS[method]!;
  const r = schema.safeParse({ method, params });
  if (r.success) {
    const bad = method === 'resources/read' ? resourceUriError(params['uri']) : undefined;
    if (bad) throw bad;
    return;
  }
  const issue = r.error.issues[0];
  const path = issue ? issue.path.map(String).join('.') : 'params';
  throw invalidParams(`Invalid params: ${path}: ${issue?.message ?? 'invalid'}`);
}
