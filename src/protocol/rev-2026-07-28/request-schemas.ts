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
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/server';
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
  if (method === 'tools/call' && plainToolCall(params)) return;
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

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The hot path of every pass-through call, without zod: true for the params of a tools/call that
 * `CallToolRequestSchema` surely accepts (a string `name`, `arguments` an object if present, `_meta` an
 * object whose `progressToken`, if any, is a string or a safe integer, and neither a `task` hint nor a
 * related-task key, whose shapes are left to the schema). False leaves the verdict, and the error
 * message, to the schema: this check accepts a subset of what it accepts, never more.
 */
function plainToolCall(params: Record<string, unknown>): boolean {
  if (!isRecord(params) || typeof params['name'] !== 'string' || params['task'] !== undefined) return false;
  const args = params['arguments'];
  if (args !== undefined && !isRecord(args)) return false;
  const meta = params['_meta'];
  if (meta === undefined) return true;
  if (!isRecord(meta) || meta[RELATED_TASK_META_KEY] !== undefined) return false;
  const token = meta['progressToken'];
  return token === undefined || typeof token === 'string' || Number.isSafeInteger(token);
}
