CREATE TABLE "deployment_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
