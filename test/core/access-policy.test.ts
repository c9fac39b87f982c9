import { describe, expect, it } from 'vitest';
import { createAccessPolicy, shows, type PolicySettings } from '../../src/core/access-policy.js';

const policy = (over: Partial<PolicySettings>) => createAccessPolicy({ groups: {}, rules: [], default: 'allow', ...over });

describe('access policy', () => {
  it('allows everything by default, and nothing with default deny and no allow', () => {
    expect(policy({}).for({ principal: 'a' }).allows('tools', 'github', 'create_issue')).toBe(true);
    const closed = policy({ default: 'deny' }).for({ principal: 'a' });
    expect(closed.allows('tools', 'github', 'create_issue')).toBe(false);
    expect(closed.deniesServer('github')).toBe(true);
  });

  it('denies by glob over tool names and servers; a deny wins over an allow', () => {
    const p = policy({
      rules: [{ principals: ['bob'], allow: { servers: ['*'] }, deny: { tools: ['delete_*', 'drop?'], servers: ['prod-db'] } }],
    });
    const bob = p.for({ principal: 'bob' });
    expect(bob.allows('tools', 'github', 'delete_repo')).toBe(false);
    expect(bob.allows('tools', 'github', 'drops')).toBe(false);
    expect(bob.allows('tools', 'github', 'drop')).toBe(true);
    expect(bob.allows('tools', 'github', 'create_issue')).toBe(true);
    expect(bob.allows('prompts', 'prod-db', 'anything')).toBe(false);
    expect(bob.deniesServer('prod-db')).toBe(true);
    // A rule for bob does not touch alice.
    expect(p.for({ principal: 'alice' }).allows('tools', 'github', 'delete_repo')).toBe(true);
  });

  it('an allow-list grants only what it names: a servers-only allow grants all their items, a tools allow no prompts', () => {
    const p = policy({
      groups: { readers: ['carol', 'dave'] },
      rules: [
        { groups: ['readers'], allow: { servers: ['docs'] } },
        { principals: ['erin'], allow: { tools: ['read_*'] } },
      ],
    });
    const carol = p.for({ principal: 'carol' });
    expect(carol.allows('tools', 'docs', 'search')).toBe(true);
    expect(carol.allows('resources', 'docs', 'file:///a')).toBe(true);
    expect(carol.allows('tools', 'github', 'search')).toBe(false);
    expect(carol.deniesServer('github')).toBe(true);
    const erin = p.for({ principal: 'erin' });
    expect(erin.allows('tools', 'any', 'read_file')).toBe(true);
    expect(erin.allows('tools', 'any', 'write_file')).toBe(false);
    expect(erin.allows('prompts', 'any', 'read_prompt')).toBe(false);
    // No rule names frank: the default (allow) decides.
    expect(p.for({ principal: 'frank' }).allows('tools', 'github', 'x')).toBe(true);
  });

  it('applies a rule by token scope; a rule naming no one applies to everyone', () => {
    const p = policy({
      rules: [{ scopes: ['mcp:admin'], allow: { servers: ['*'] } }, { allow: { tools: ['echo'] } }, { deny: { tools: ['rm'] } }],
    });
    expect(p.for({ principal: 'x', tokenScopes: new Set(['mcp:admin']) }).allows('tools', 's', 'anything')).toBe(true);
    expect(p.for({ principal: 'x', tokenScopes: new Set(['mcp']) }).allows('tools', 's', 'anything')).toBe(false);
    expect(p.for({ principal: 'x' }).allows('tools', 's', 'echo')).toBe(true);
    expect(p.for({ principal: 'x', tokenScopes: new Set(['mcp:admin']) }).allows('tools', 's', 'rm')).toBe(false);
  });

  it('checks a resource read through a template against both its URI and the template', () => {
    const denyTemplate = policy({ rules: [{ deny: { resources: ['db://{table}'] } }] }).for({ principal: 'x' });
    expect(denyTemplate.allowsResource('s', 'db://users', 'db://{table}')).toBe(false);
    expect(denyTemplate.allowsResource('s', 'file:///a')).toBe(true);
    const allowTemplate = policy({ default: 'deny', rules: [{ allow: { resources: ['db://{table}'] } }] }).for({ principal: 'x' });
    expect(allowTemplate.allowsResource('s', 'db://users', 'db://{table}')).toBe(true);
    expect(allowTemplate.allowsResource('s', 'db://users')).toBe(false);
    const denyUri = policy({ rules: [{ deny: { resources: ['db://secrets'] } }] }).for({ principal: 'x' });
    expect(denyUri.allowsResource('s', 'db://secrets', 'db://{table}')).toBe(false);
  });

  it('checks a URI read in every form its server may read it in: case of the scheme, dot segments, percent-encoding', () => {
    const deny = policy({ rules: [{ deny: { resources: ['demo://readme', 'file:///etc/*'] } }] }).for({ principal: 'x' });
    for (const uri of [
      'demo://readme',
      'DEMO://readme',
      'Demo://readme',
      'file:///etc/passwd',
      'file:///tmp/../etc/passwd',
      'file:///tmp/..%2Fetc/passwd',
      'FILE:///etc/x',
    ])
      expect(deny.allowsResource('s', uri), uri).toBe(false);
    expect(deny.allowsResource('s', 'demo://other')).toBe(true);
    const allow = policy({ default: 'deny', rules: [{ allow: { resources: ['file:///tmp/*', 'https://example.com'] } }] }).for({ principal: 'x' });
    expect(allow.allowsResource('s', 'file:///tmp/a.txt')).toBe(true);
    expect(allow.allowsResource('s', 'https://example.com')).toBe(true);
    expect(allow.allowsResource('s', 'https://example.com/')).toBe(true);
    for (const uri of ['file:///tmp/../etc/passwd', 'file:///tmp/%2E%2E/etc/passwd', 'file:///tmp/..%2Fetc/passwd', 'file:///tmp/..%2Fetc%2Fpasswd?x=%E0'])
      expect(allow.allowsResource('s', uri), uri).toBe(false);
    // Through a template the URI matched as sent: the template grants only a URI that stays on its path.
    const allowTemplate = policy({ default: 'deny', rules: [{ allow: { resources: ['file:///tmp/*'] } }] }).for({ principal: 'x' });
    expect(allowTemplate.allowsResource('s', 'file:///tmp/a%20b.txt', 'file:///tmp/{name}')).toBe(true);
    for (const uri of ['file:///tmp/..%2Fetc%2Fpasswd', 'file:///tmp/../etc/passwd', 'file:///tmp/%2e%2e/etc', 'file:///tmp/..\\etc'])
      expect(allowTemplate.allowsResource('s', uri, 'file:///tmp/{+path}'), uri).toBe(false);
  });

  it('matches names literally but for * and ?', () => {
    const p = policy({ rules: [{ deny: { resources: ['file:///etc/*'], tools: ['a.b'] } }] }).for({ principal: 'x' });
    expect(p.allows('resources', 's', 'file:///etc/passwd')).toBe(false);
    expect(p.allows('resourceTemplates', 's', 'file:///etc/{name}')).toBe(false);
    expect(p.allows('resources', 's', 'file:///home/x')).toBe(true);
    expect(p.allows('tools', 's', 'aXb')).toBe(true);
  });

  it('shows a listed item by what using it is checked by: tools and prompts by name, resources by URI in any form, templates by URI template', () => {
    const bob = policy({ rules: [{ deny: { tools: ['drop'], resources: ['demo://readme', 'file:///{path}'] } }] }).for({ principal: 'bob' });
    expect(shows(bob, 'tools', 's', { name: 'drop' })).toBe(false);
    expect(shows(bob, 'tools', 's', { name: 'echo' })).toBe(true);
    expect(shows(bob, 'resources', 's', { name: 'readme', uri: 'demo://readme' })).toBe(false);
    expect(shows(bob, 'resources', 's', { name: 'readme', uri: 'DEMO://readme' })).toBe(false);
    expect(shows(bob, 'resources', 's', { name: 'demo://readme', uri: 'demo://other' })).toBe(true);
    expect(shows(bob, 'resourceTemplates', 's', { name: 'files', uriTemplate: 'file:///{path}' })).toBe(false);
    expect(shows(bob, 'resources', 's', { name: 'no uri' })).toBe(false);
  });
});
