/** Chart (bar, line, pie) with Chart.js; only the controllers and elements used are registered (tree-shaken). */
import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';
import { useEffect, useRef } from 'react';

import { formatText } from './format';
import type { ChartData } from './types';

Chart.register(ArcElement, BarController, BarElement, CategoryScale, Legend, LinearScale, LineController, LineElement, PieController, PointElement, Tooltip);

export const PALETTE = ['#4f46e5', '#ea580c', '#16a34a', '#0891b2', '#db2777', '#ca8a04', '#7c3aed', '#dc2626', '#2563eb', '#65a30d'];

function colour(i: number): string {
  return PALETTE[i % PALETTE.length] ?? '#4f46e5';
}

export function chartConfig(data: ChartData): ChartConfiguration {
  const labels = data.labels.map((l) => formatText(l));
  const pie = data.chartType === 'pie';
  return {
    type: data.chartType,
    data: {
      labels,
      datasets: data.series.map((s, i) => ({
        label: s.label,
        data: s.values,
        backgroundColor: pie ? labels.map((_, j) => colour(j)) : `${colour(i)}${data.chartType === 'line' ? '33' : 'cc'}`,
        borderColor: pie ? '#ffffff' : colour(i),
        borderWidth: pie ? 1 : 2,
        tension: 0.25,
        spanGaps: true,
      })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: { duration: 250 },
      plugins: { legend: { display: pie || data.series.length > 1, position: pie ? 'right' : 'top' } },
      ...(pie ? {} : { scales: { y: { beginAtZero: true } } }),
    },
  } as ChartConfiguration;
}

export default function ChartWidget({ data }: { data: ChartData }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);

  useEffect(() => {
    if (!canvas.current) {
      chart.current?.destroy();
      chart.current = null;
      return;
    }
    const config = chartConfig(data);
    const current = chart.current;
    if (current && current.canvas === canvas.current && (current.config as { type?: string }).type === data.chartType) {
      current.data = config.data;
      current.options = config.options ?? {};
      current.update();
      return;
    }
    current?.destroy();
    chart.current = new Chart(canvas.current, config);
  }, [data]);

  useEffect(
    () => () => {
      chart.current?.destroy();
      chart.current = null;
    },
    [],
  );

  const points = data.labels.length;
  return (
    <div className="wchart" data-testid="widget-chart" data-chart-type={data.chartType} data-point-count={points} data-series-count={data.series.length}>
      {points === 0 ? (
        <div className="widget__message">The chart has no points.</div>
      ) : (
        <div className="wchart__box">
          <canvas ref={canvas} role="img" aria-label={`${data.chartType} chart of ${data.series.map((s) => s.label).join(', ')}`} />
        </div>
      )}
    </div>
  );
}
