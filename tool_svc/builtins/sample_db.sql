-- Sample shop database for the built-in SQL tools (deterministic data).
-- Built into a SQLite file on first use; the tools only ever read it.

CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price REAL NOT NULL
);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    ordered_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled'))
);

CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders (id),
    product_id INTEGER NOT NULL REFERENCES products (id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price REAL NOT NULL,
    PRIMARY KEY (order_id, product_id)
);

CREATE INDEX orders_customer_id ON orders (customer_id);
CREATE INDEX order_items_product_id ON order_items (product_id);

INSERT INTO customers (id, name, country, created_at) VALUES
    (1, 'Alice Martin', 'France', '2023-01-14'),
    (2, 'Bruno Costa', 'Brazil', '2023-02-03'),
    (3, 'Chen Wei', 'China', '2023-02-27'),
    (4, 'Dana Whitfield', 'United States', '2023-03-19'),
    (5, 'Emre Yilmaz', 'Turkey', '2023-04-08'),
    (6, 'Fatima Zahra', 'Morocco', '2023-05-22'),
    (7, 'Giulia Rossi', 'Italy', '2023-06-30'),
    (8, 'Hiro Tanaka', 'Japan', '2023-08-11'),
    (9, 'Ingrid Larsen', 'Norway', '2023-09-05'),
    (10, 'Jonas Weber', 'Germany', '2023-10-17');

INSERT INTO products (id, name, category, price) VALUES
    (1, 'Mechanical Keyboard', 'Electronics', 89.90),
    (2, 'Wireless Mouse', 'Electronics', 24.50),
    (3, '27-inch Monitor', 'Electronics', 249.00),
    (4, 'USB-C Hub', 'Electronics', 39.99),
    (5, 'Standing Desk', 'Furniture', 399.00),
    (6, 'Ergonomic Chair', 'Furniture', 279.50),
    (7, 'Desk Lamp', 'Furniture', 45.00),
    (8, 'Notebook A5', 'Stationery', 6.50),
    (9, 'Fountain Pen', 'Stationery', 32.00),
    (10, 'Sticky Notes', 'Stationery', 3.20),
    (11, 'Coffee Beans 1kg', 'Grocery', 18.75),
    (12, 'Green Tea 100 bags', 'Grocery', 9.90);

INSERT INTO orders (id, customer_id, ordered_at, status) VALUES
    (1, 8, '2024-01-04', 'shipped'),
    (2, 4, '2024-01-11', 'shipped'),
    (3, 3, '2024-01-02', 'cancelled'),
    (4, 6, '2024-02-21', 'delivered'),
    (5, 1, '2024-02-15', 'cancelled'),
    (6, 3, '2024-03-09', 'delivered'),
    (7, 5, '2024-03-05', 'delivered'),
    (8, 4, '2024-03-07', 'shipped'),
    (9, 7, '2024-04-28', 'delivered'),
    (10, 7, '2024-04-27', 'delivered'),
    (11, 9, '2024-05-23', 'shipped'),
    (12, 9, '2024-05-13', 'delivered'),
    (13, 10, '2024-05-13', 'pending'),
    (14, 6, '2024-06-20', 'shipped'),
    (15, 4, '2024-06-18', 'delivered'),
    (16, 2, '2024-07-15', 'delivered'),
    (17, 9, '2024-07-03', 'shipped'),
    (18, 9, '2024-07-12', 'delivered'),
    (19, 10, '2024-08-01', 'shipped'),
    (20, 6, '2024-08-07', 'pending'),
    (21, 2, '2024-09-28', 'delivered'),
    (22, 5, '2024-09-13', 'pending'),
    (23, 3, '2024-09-02', 'shipped'),
    (24, 9, '2024-10-02', 'delivered'),
    (25, 7, '2024-10-06', 'pending'),
    (26, 8, '2024-11-12', 'delivered'),
    (27, 7, '2024-11-06', 'delivered'),
    (28, 2, '2024-11-20', 'pending'),
    (29, 10, '2024-12-19', 'pending'),
    (30, 5, '2024-12-21', 'pending');

INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES
    (1, 5, 2, 399.00),
    (1, 10, 4, 3.20),
    (2, 2, 4, 24.50),
    (2, 6, 3, 279.50),
    (2, 7, 3, 45.00),
    (3, 3, 3, 249.00),
    (3, 9, 1, 32.00),
    (4, 7, 2, 45.00),
    (5, 5, 2, 399.00),
    (5, 12, 1, 9.90),
    (6, 6, 1, 279.50),
    (6, 7, 4, 45.00),
    (6, 10, 3, 3.20),
    (7, 6, 1, 279.50),
    (7, 7, 1, 45.00),
    (8, 7, 2, 45.00),
    (8, 8, 3, 6.50),
    (8, 9, 1, 32.00),
    (9, 4, 4, 39.99),
    (9, 5, 4, 399.00),
    (9, 11, 4, 18.75),
    (10, 2, 3, 24.50),
    (11, 5, 2, 399.00),
    (11, 6, 2, 279.50),
    (12, 11, 2, 18.75),
    (13, 10, 4, 3.20),
    (14, 6, 4, 279.50),
    (15, 5, 4, 399.00),
    (15, 6, 3, 279.50),
    (16, 1, 2, 89.90),
    (16, 5, 1, 399.00),
    (16, 8, 1, 6.50),
    (17, 2, 4, 24.50),
    (17, 4, 3, 39.99),
    (17, 11, 3, 18.75),
    (18, 11, 4, 18.75),
    (19, 9, 4, 32.00),
    (20, 1, 3, 89.90),
    (20, 6, 2, 279.50),
    (20, 11, 4, 18.75),
    (21, 12, 2, 9.90),
    (22, 2, 3, 24.50),
    (22, 10, 3, 3.20),
    (23, 6, 1, 279.50),
    (24, 3, 1, 249.00),
    (25, 10, 3, 3.20),
    (25, 11, 2, 18.75),
    (26, 1, 2, 89.90),
    (26, 3, 4, 249.00),
    (27, 10, 3, 3.20),
    (27, 11, 4, 18.75),
    (28, 5, 3, 399.00),
    (28, 6, 4, 279.50),
    (28, 8, 3, 6.50),
    (29, 8, 4, 6.50),
    (30, 6, 3, 279.50),
    (30, 11, 1, 18.75);
