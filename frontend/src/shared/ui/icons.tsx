/** Small inline icons (no emoji: not every system has an emoji font). */

export function PinIcon({ size = 13 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 16 16" aria-hidden="true" className="icon-pin">
      <path
        fill="currentColor"
        d="M10.6 1.2a1 1 0 0 1 1.4 0l2.8 2.8a1 1 0 0 1 0 1.4l-.7.7a1 1 0 0 1-1.1.2L10.6 8l.3 2.6a1 1 0 0 1-.3.8l-.9.9-2.5-2.5-3.6 3.6H2.9v-.7l3.6-3.6L4 6.6l.9-.9a1 1 0 0 1 .8-.3l2.6.3 1.7-2.4a1 1 0 0 1 .2-1.1z"
      />
    </svg>
  );
}

export function TrashIcon({ size = 14 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 16 16" aria-hidden="true">
      <path
        fill="currentColor"
        d="M6 1.5h4a1 1 0 0 1 1 1V3h3v1.5H2V3h3v-.5a1 1 0 0 1 1-1zM3.2 5.5h9.6l-.7 8.1a1.5 1.5 0 0 1-1.5 1.4H5.4a1.5 1.5 0 0 1-1.5-1.4zm3 1.5v6h1.2V7zm2.4 0v6h1.2V7z"
      />
    </svg>
  );
}

export function CopyIcon({ size = 14 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 16 16" aria-hidden="true">
      <path fill="currentColor" d="M5 1.5h7.5A1.5 1.5 0 0 1 14 3v8.5h-1.5V3H5zM2 5a1.5 1.5 0 0 1 1.5-1.5h6.5A1.5 1.5 0 0 1 11.5 5v8.5A1.5 1.5 0 0 1 10 15H3.5A1.5 1.5 0 0 1 2 13.5zm1.5 0v8.5H10V5z" />
    </svg>
  );
}
