"""NAME
    fio-pack gen dbreplay-dump - a deterministic mysqldump-style SQL dump to load into a database

SYNOPSIS
    fio-pack gen dbreplay-dump [--dialect mysql|sqlite] [--scale N] [--rows-per-insert N] [-o FILE]

DESCRIPTION
    Writes the dump a customer database of the 000 article's kind would give
    (`mysqldump db > dump.sql`): three tables, customers, orders and
    order_items, with primary keys and secondary indexes, filled with
    extended INSERTs of --rows-per-insert rows each, in mysqldump's layout
    (DROP TABLE, CREATE TABLE ... ENGINE=InnoDB, LOCK TABLES, ALTER TABLE ...
    DISABLE KEYS, INSERTs, ENABLE KEYS, UNLOCK TABLES, the /*!...*/ session
    settings around it). The same options give the same bytes: the rows come
    from a seeded generator, no clock.

    --scale N (default 1) makes 10000 N customers, 20000 N orders and about
    45000 N order items (about 3.5 MB of SQL per unit of scale); N is at
    most 2560 (10 GiB of SQL, the most a generator writes).

    --dialect sqlite writes the same rows for the sqlite3 shell: no ENGINE,
    no LOCK TABLES or /*!...*/ lines, INTEGER PRIMARY KEY for the
    auto-increment keys and CREATE INDEX for the secondary keys. Neither
    dialect wraps the INSERTs in a transaction: like mysqldump's output
    loaded as it is, every INSERT commits on its own.

    The captures in jobs/dbreplay/ load it with
      fio-pack gen dbreplay-dump -o dump.sql && mariadb test < dump.sql
      fio-pack gen dbreplay-dump --dialect sqlite -o dump-sqlite.sql && sqlite3 load.db < dump-sqlite.sql

"""
import argparse
import random

from fiopack import outputs
from fiopack.gen.common import check_output_bytes
from fiopack.options import Parser, number

# what one unit of --scale weighs at most: 3.5 MB at scale 1, a little more
# as the ids grow longer with the scale
SCALE_BYTES = 4 << 20

FIRST = ("Anna", "Bram", "Chloe", "Daan", "Emma", "Finn", "Guus", "Hanna", "Isa", "Jesse",
         "Kees", "Lotte", "Milan", "Noor", "Otto", "Pien", "Quinten", "Roos", "Sem", "Tess")
LAST = ("de Jong", "Jansen", "de Vries", "van den Berg", "van Dijk", "Bakker", "Janssen",
        "Visser", "Smit", "Meijer", "de Boer", "Mulder", "de Groot", "Bos", "Vos", "Peters")
CITY = ("Amsterdam", "Rotterdam", "Utrecht", "Eindhoven", "Groningen", "Tilburg", "Almere",
        "Breda", "Nijmegen", "Apeldoorn", "Haarlem", "Arnhem", "Zwolle", "Leiden", "Maastricht")
STATUS = ("new", "paid", "shipped", "delivered", "returned", "cancelled")
WORDS = ("urgent", "gift", "call first", "leave at door", "second floor", "invoice by mail",
         "fragile", "weekend delivery", "no substitutes", "repeat order")


def q(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def stamp(rnd: random.Random) -> str:
    # 2007-2008, the article's time
    d = rnd.randrange(730)
    y, d = (2007, d) if d < 365 else (2008, d - 365)
    m = min(12, d // 31 + 1)
    day = d % 28 + 1
    return f"{y}-{m:02d}-{day:02d} {rnd.randrange(24):02d}:{rnd.randrange(60):02d}:" \
           f"{rnd.randrange(60):02d}"


def customers(rnd, n):
    for i in range(1, n + 1):
        f, l_ = rnd.choice(FIRST), rnd.choice(LAST)
        email = f"{f.lower()}.{l_.replace(' ', '').lower()}{i}@example.nl"
        yield (i, q(f"{f} {l_}"), q(email), q(rnd.choice(CITY)), q(stamp(rnd)),
               f"{rnd.randrange(1000000) / 100:.2f}")


def orders(rnd, n, ncust):
    for i in range(1, n + 1):
        note = rnd.choice(WORDS) if rnd.random() < 0.3 else ""
        yield (i, rnd.randrange(1, ncust + 1), q(rnd.choice(STATUS)),
               f"{rnd.randrange(500, 50000000) / 100:.2f}", q(stamp(rnd)), q(note))


def items(rnd, norders):
    for o in range(1, norders + 1):
        for line in range(1, rnd.choice((1, 1, 2, 2, 2, 3, 3, 4)) + 1):
            yield (o, line, q(f"SKU{rnd.randrange(100000):07d}"), rnd.randrange(1, 10),
                   f"{rnd.randrange(99, 99999) / 100:.2f}")


TABLES = (
    ("customers",
     ["`id` int(11) NOT NULL AUTO_INCREMENT", "`name` varchar(64) NOT NULL",
      "`email` varchar(128) NOT NULL", "`city` varchar(32) NOT NULL",
      "`created` datetime NOT NULL", "`balance` decimal(12,2) NOT NULL"],
     "`id`", [("idx_email", "`email`"), ("idx_city", "`city`")]),
    ("orders",
     ["`id` int(11) NOT NULL AUTO_INCREMENT", "`customer_id` int(11) NOT NULL",
      "`status` varchar(16) NOT NULL", "`total` decimal(12,2) NOT NULL",
      "`created` datetime NOT NULL", "`note` varchar(255) NOT NULL"],
     "`id`", [("idx_customer", "`customer_id`"), ("idx_created", "`created`")]),
    ("order_items",
     ["`order_id` int(11) NOT NULL", "`line` smallint(6) NOT NULL",
      "`sku` char(10) NOT NULL", "`qty` int(11) NOT NULL", "`price` decimal(10,2) NOT NULL"],
     "`order_id`,`line`", [("idx_sku", "`sku`")]),
)


def create(dialect, name, cols, pk, keys):
    if dialect == "sqlite":
        body = []
        for c in cols:
            if "AUTO_INCREMENT" in c:
                body.append(c.split(" ")[0] + " INTEGER PRIMARY KEY")
            else:
                body.append(c)
        if "," in pk:
            body.append(f"PRIMARY KEY ({pk})")
        out = f"CREATE TABLE `{name}` (\n  " + ",\n  ".join(body) + "\n);\n"
        for k, c in keys:
            out += f"CREATE INDEX `{name}_{k}` ON `{name}` ({c});\n"
        return out
    body = cols + [f"PRIMARY KEY ({pk})"] + [f"KEY `{k}` ({c})" for k, c in keys]
    return (f"/*!40101 SET @saved_cs_client     = @@character_set_client */;\n"
            f"/*!40101 SET character_set_client = utf8 */;\n"
            f"CREATE TABLE `{name}` (\n  " + ",\n  ".join(body) +
            "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\n"
            "/*!40101 SET character_set_client = @saved_cs_client */;\n")


def dump(w, dialect: str, gens: dict, rows_per_insert: int) -> None:
    """The dump in @dialect, through the write function @w."""
    my = dialect == "mysql"
    if my:
        w("-- MySQL dump 10.13  (mysqldump-style, written by scripts/fio-pack gen dbreplay-dump)\n--\n"
          "-- Host: localhost    Database: test\n"
          "-- ------------------------------------------------------\n\n"
          "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"
          "/*!40101 SET NAMES utf8mb4 */;\n"
          "/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;\n"
          "/*!40103 SET TIME_ZONE='+00:00' */;\n"
          "/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;\n"
          "/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;\n"
          "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\n"
          "/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;\n\n")
    else:
        w("-- SQL dump for sqlite3 (written by scripts/fio-pack gen dbreplay-dump --dialect sqlite)\n\n")
    for name, cols, pk, keys in TABLES:
        w(f"--\n-- Table structure for table `{name}`\n--\n\n")
        w(f"DROP TABLE IF EXISTS `{name}`;\n")
        w(create(dialect, name, cols, pk, keys))
        w(f"\n--\n-- Dumping data for table `{name}`\n--\n\n")
        if my:
            w(f"LOCK TABLES `{name}` WRITE;\n/*!40000 ALTER TABLE `{name}` DISABLE KEYS */;\n")
        # an INSERT is written as its rows come, a few hundred at a time:
        # memory stays flat whatever --rows-per-insert (one INSERT of a whole
        # table held it all)
        n, parts = 0, []
        for row in gens[name]:
            parts.append((f"INSERT INTO `{name}` VALUES (" if n == 0 else ",(") +
                         ",".join(map(str, row)) + ")")
            n += 1
            if n == rows_per_insert:
                parts.append(";\n")
                n = 0
            if len(parts) >= 512:
                w("".join(parts))
                parts = []
        if n:
            parts.append(";\n")
        w("".join(parts))
        if my:
            w(f"/*!40000 ALTER TABLE `{name}` ENABLE KEYS */;\nUNLOCK TABLES;\n")
        w("\n")
    if my:
        w("/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;\n"
          "/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;\n"
          "/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;\n"
          "/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;\n"
          "/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n"
          "/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;\n\n-- Dump completed\n")


def main(argv=None) -> int:
    # the manual is the docstring (NAME, SYNOPSIS, DESCRIPTION) and the options
    ap = Parser(prog="fio-pack gen dbreplay-dump", usage=argparse.SUPPRESS,
                                 description=__doc__.strip(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", choices=("mysql", "sqlite"), default="mysql",
                    help="mysql (mysqldump's layout) or sqlite (for the sqlite3 shell); "
                         "default mysql")
    ap.add_argument("--scale", type=number(int, low=1), default=1, metavar="N",
                    help="row counts as above (default 1, at most 2560)")
    ap.add_argument("--rows-per-insert", type=number(int, low=1), default=500, metavar="N",
                    help="rows in one extended INSERT (default 500)")
    ap.add_argument("-o", "--output", metavar="FILE", help="output (default standard output; " +
                    outputs.POLICY_HELP + ")")
    a = ap.parse_args(argv)
    check_output_bytes(ap, a.scale * SCALE_BYTES, f"--scale {a.scale}")
    rnd = random.Random(20080123)
    ncust, nord = 10000 * a.scale, 20000 * a.scale
    gens = {"customers": customers(rnd, ncust), "orders": orders(rnd, nord, ncust),
            "order_items": items(rnd, nord)}
    out = outputs.Output(a.output or "-", "-o")
    try:
        dump(out.write, a.dialect, gens, a.rows_per_insert)
        out.commit()
    finally:
        out.abort()
    return 0

