CREATE TABLE "login_failures" (
	"key" text PRIMARY KEY NOT NULL,
	"count" integer NOT NULL,
	"wait_until" bigint NOT NULL,
	"last_at" bigint NOT NULL
);
