import { describe, expect, it } from 'vitest';
import { uriForLog, uriHider } from '../../src/util/uri-for-log.js';

describe('a URI as a log line shows it', () => {
  it('drops credentials, query values and the fragment; keeps the query names', () => {
    expect(uriForLog('http://otlpuser:OTLP-PASS@127.0.0.1:4318/v1/traces')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(uriForLog('postgresql://u:p@db:5432/x?sslpassword=s&mode=1#f')).toBe('postgresql://db:5432/x?sslpassword=…&mode=…');
    expect(uriForLog('file:///tmp/a@b.txt')).toBe('file:///tmp/a@b.txt');
    expect(uriForLog('https://user:p@ss@collector.example/v1')).toBe('https://collector.example/v1'); // a raw @ in the password
    expect(uriForLog('demo://readme')).toBe('demo://readme');
  });

  it('hides the query values of a URI wherever a text quotes it', () => {
    expect(uriHider('x://r?token=abc')!('cannot read x://r?token=abc')).toBe('cannot read x://r?token=…');
    expect(uriHider('x://u:pw@r')!('cannot read x://u:pw@r')).toBe('cannot read x://r');
    expect(uriHider('x://plain')).toBeUndefined();
  });
});
