-- The example shop: the source of shop.sqlite (rebuild: sqlite3 shop.sqlite < shop.sql).
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('new', 'shipped', 'returned')),
    total REAL NOT NULL,
    ordered_on TEXT NOT NULL
);
INSERT INTO orders (id, customer, status, total, ordered_on) VALUES
    (1, 'Ada', 'shipped', 42.50, '2026-01-04'),
    (2, 'Grace', 'new', 18.00, '2026-01-05'),
    (3, 'Linus', 'shipped', 99.90, '2026-01-05'),
    (4, 'Barbara', 'returned', 12.25, '2026-01-06'),
    (5, 'Ken', 'shipped', 7.75, '2026-01-07'),
    (6, 'Margaret', 'new', 250.00, '2026-01-08');
