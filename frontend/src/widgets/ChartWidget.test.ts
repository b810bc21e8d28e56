import { describe, expect, it } from 'vitest';

import { chartConfig, PALETTE } from './ChartWidget';

describe('chartConfig', () => {
  it('maps labels and series to Chart.js datasets', () => {
    const config = chartConfig({ chartType: 'bar', labels: ['a', 2, null], series: [{ label: 'Qty', values: [1, null, 3] }] });
    expect(config.type).toBe('bar');
    expect(config.data.labels).toEqual(['a', '2', '']);
    expect(config.data.datasets).toHaveLength(1);
    expect(config.data.datasets[0]?.data).toEqual([1, null, 3]);
    expect(config.data.datasets[0]?.label).toBe('Qty');
  });
  it('colours each slice of a pie and shows its legend', () => {
    const config = chartConfig({ chartType: 'pie', labels: ['a', 'b'], series: [{ label: 'Share', values: [1, 2] }] });
    expect(config.data.datasets[0]?.backgroundColor).toEqual([PALETTE[0], PALETTE[1]]);
    expect((config.options?.plugins?.legend as { display?: boolean }).display).toBe(true);
  });
});
