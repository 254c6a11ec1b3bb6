/* duckdb-sql.c - runs SQL statements with DuckDB, for the tests that write
 * Parquet (`COPY (...) TO 'x.parquet' (FORMAT parquet)`); built only where
 * scripts/deps.sh installed DuckDB. Usage: atr-duckdb-sql SQL... */
#include <duckdb.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(NULL, &db) == DuckDBError || duckdb_connect(db, &con) == DuckDBError) {
        fprintf(stderr, "atr-duckdb-sql: cannot open DuckDB\n");
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        duckdb_result res;
        if (duckdb_query(con, argv[i], &res) == DuckDBError) {
            fprintf(stderr, "atr-duckdb-sql: %s\n", duckdb_result_error(&res));
            rc = 1;
        }
        duckdb_destroy_result(&res);
    }
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
