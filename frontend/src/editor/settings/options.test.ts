import { describe, expect, it } from 'vitest';

import type { Problem } from '../../api/types';
import type { WorkflowOptions } from '../../graph/convert';
import {
  notificationOf,
  webhookLabelRowErrors,
  webhookLabelsOf,
  withWebhookLabels,
  notificationUrlError,
  withNotification,
  formatDuration,
  inputText,
  MAX_SCHEDULES,
  numberOption,
  parseInputText,
  scheduleProblem,
  schedulesOf,
  scheduleToJson,
  secondsError,
  settingsProblems,
  validateSchedule,
  validateSchedules,
  withOption,
  withSchedules,
} from './options';

describe('workflow options (de)serialisation', () => {
  it('reads schedules tolerantly and writes them without defaults', () => {
    const options = {
      timeoutSeconds: 60,
      schedules: [{ cron: '0 9 * * *', timezone: 'UTC', input: { a: 1 } }, { cron: '*/5 * * * *', timezone: '', input: null }, 'junk'],
    };
    expect(schedulesOf(options)).toEqual([{ cron: '0 9 * * *', timezone: 'UTC', input: { a: 1 } }, { cron: '*/5 * * * *' }, { cron: '' }]);
    expect(schedulesOf(null)).toEqual([]);
    expect(schedulesOf({ schedules: 'no' })).toEqual([]);
    expect(scheduleToJson({ cron: '0 9 * * *', timezone: '', input: null })).toEqual({ cron: '0 9 * * *' });
    expect(scheduleToJson({ cron: '0 9 * * *', timezone: 'Asia/Tokyo', input: [] })).toEqual({ cron: '0 9 * * *', timezone: 'Asia/Tokyo', input: [] });
  });

  it('sets and removes keys, keeping the ones it does not know, null when empty', () => {
    const options = { timeoutSeconds: 60, custom: true };
    expect(withOption(options, 'slaSeconds', 30)).toEqual({ timeoutSeconds: 60, custom: true, slaSeconds: 30 });
    expect(withOption(options, 'timeoutSeconds', undefined)).toEqual({ custom: true });
    expect(withOption({ slaSeconds: 1 }, 'slaSeconds', undefined)).toBeNull();
    expect(withOption(null, 'timeoutSeconds', 5)).toEqual({ timeoutSeconds: 5 });
    expect(withSchedules(options, [{ cron: '0 0 * * *', timezone: '' }])).toEqual({ timeoutSeconds: 60, custom: true, schedules: [{ cron: '0 0 * * *' }] });
    expect(withSchedules({ schedules: [{ cron: '* * * * *' }] }, [])).toBeNull();
    expect(options).toEqual({ timeoutSeconds: 60, custom: true });
    const loose = { timeoutSeconds: 60, slaSeconds: 'x' } as unknown as WorkflowOptions;
    expect(numberOption(loose, 'timeoutSeconds')).toBe(60);
    expect(numberOption(loose, 'slaSeconds')).toBeUndefined();
  });

  it('parses the input field: blank is none, else JSON', () => {
    expect(parseInputText('  ')).toEqual({ ok: true, value: undefined });
    expect(parseInputText('null')).toEqual({ ok: true, value: undefined });
    expect(parseInputText('{"a": [1, 2]}')).toEqual({ ok: true, value: { a: [1, 2] } });
    const bad = parseInputText('{a: 1}');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/^Not JSON/);
    expect(inputText(undefined)).toBe('');
    expect(inputText({ a: 1 })).toBe('{\n  "a": 1\n}');
  });

  it('formats durations and checks seconds', () => {
    expect(formatDuration(3600)).toBe('1 h');
    expect(formatDuration(5400)).toBe('1 h 30 min');
    expect(formatDuration(90)).toBe('1 min 30 s');
    expect(formatDuration(90061)).toBe('1 d 1 h');
    expect(formatDuration(undefined)).toBe('');
    expect(secondsError(undefined)).toBeUndefined();
    expect(secondsError(0)).toMatch(/above 0/);
    expect(secondsError(10)).toBeUndefined();
  });
});

describe('schedule validation', () => {
  it('checks cron and time zone of each row, and the row limit', () => {
    expect(validateSchedule({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris' })).toEqual({});
    expect(validateSchedule({ cron: '0 9 * * 1-5' })).toEqual({});
    expect(validateSchedule({ cron: '0 25 * * *', timezone: 'Nowhere/City' })).toEqual({
      cron: 'hour: 25 is out of range 0–23',
      timezone: expect.stringMatching(/not an IANA time zone/) as unknown as string,
    });
    const many = Array.from({ length: MAX_SCHEDULES + 1 }, () => ({ cron: '* * * * *' }));
    const errors = validateSchedules(many);
    expect(errors[MAX_SCHEDULES - 1]).toEqual({});
    expect(errors[MAX_SCHEDULES]).toEqual({ row: 'At most 20 schedules' });
  });

  it('finds the server problems of the workflow fields by path', () => {
    const problems: Problem[] = [
      { code: 'bad', message: 'node thing', nodeId: 'a', path: 'config.code' },
      { code: 'bad_cron', message: 'invalid cron', path: 'options.schedules[1].cron' },
      { code: 'bad_cron', message: 'second message', path: 'options.schedules[1].cron' },
      { code: 'bad_row', message: 'row problem', path: 'options.schedules[0]' },
      { code: 'bad', message: 'timeout', path: 'options.timeoutSeconds' },
      { code: 'other', message: 'no path' },
      { code: 'other', message: 'nodes', path: 'nodes[0].id' },
    ];
    const byPath = settingsProblems(problems);
    expect(byPath).toEqual({
      'options.schedules[1].cron': 'invalid cron',
      'options.schedules[0]': 'row problem',
      'options.timeoutSeconds': 'timeout',
    });
    expect(scheduleProblem(byPath, 1, 'cron')).toBe('invalid cron');
    expect(scheduleProblem(byPath, 0)).toBe('row problem');
    expect(scheduleProblem(byPath, 0, 'timezone')).toBeUndefined();
  });
});

describe('notification targets', () => {
  it('sets and clears one field, dropping an empty target and keeping other options', () => {
    let options: WorkflowOptions | null = { timeoutSeconds: 60 };
    options = withNotification(options, 'onFailure', 'url', ' https://example.com/hook ');
    options = withNotification(options, 'onFailure', 'workflowId', 'wf-2');
    expect(options).toEqual({ timeoutSeconds: 60, onFailure: { url: 'https://example.com/hook', workflowId: 'wf-2' } });
    expect(notificationOf(options, 'onSlaBreach')).toEqual({});
    options = withNotification(options, 'onFailure', 'url', '');
    options = withNotification(options, 'onFailure', 'workflowId', '');
    expect(options).toEqual({ timeoutSeconds: 60 });
  });

  it('tells a non-http URL apart', () => {
    expect(notificationUrlError('https://example.com')).toBeUndefined();
    expect(notificationUrlError('ftp://example.com')).toBeTruthy();
    expect(notificationUrlError('not a url')).toBeTruthy();
    expect(notificationUrlError(undefined)).toBeUndefined();
  });
});

describe('webhook labels', () => {
  it('reads, writes and drops unnamed rows', () => {
    const options = { timeoutSeconds: 60, webhookLabels: { customer: 'customer.id' } };
    expect(webhookLabelsOf(options)).toEqual([{ name: 'customer', path: 'customer.id' }]);
    const rows = [
      { name: 'customer', path: 'customer.id' },
      { name: ' sku ', path: ' items.0.sku ' },
      { name: '', path: '' },
    ];
    expect(withWebhookLabels(options, rows)).toEqual({ timeoutSeconds: 60, webhookLabels: { customer: 'customer.id', sku: 'items.0.sku' } });
    expect(withWebhookLabels({ webhookLabels: { a: 'b' } }, [])).toBeNull();
  });

  it('names a label set twice and a path without a name', () => {
    expect(
      webhookLabelRowErrors([
        { name: 'a', path: 'x' },
        { name: 'a', path: 'y' },
        { name: '', path: 'z' },
        { name: '', path: '' },
      ]),
    ).toEqual([undefined, 'The label "a" is set twice', 'Give the label a name', undefined]);
  });
});
