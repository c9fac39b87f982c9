/**
 * Where a config file's `${workspaceFolder}` points (the entry point's: it reads the file; config.ts
 * itself needs no Node, so the edge handler parses the same shape from its bindings).
 */
import { basename, dirname } from 'node:path';

/** Folders a host keeps a project's MCP file in (VS Code, Cursor): the project is their parent. */
const HOST_CONFIG_FOLDERS = new Set(['.vscode', '.cursor']);

/**
 * What `${workspaceFolder}` means for the config file at `file` (an absolute path): the project a
 * `.vscode/mcp.json` or `.cursor/mcp.json` belongs to (both hosts give the project root), else the
 * file's own folder (a project's `.mcp.json`, a Claude Desktop file).
 */
export function workspaceFolderOf(file: string): string {
  const dir = dirname(file);
  return HOST_CONFIG_FOLDERS.has(basename(dir)) ? dirname(dir) : dir;
}
