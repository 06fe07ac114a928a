# SQL Server and AlwaysOn steps. T-SQL runs through System.Data.SqlClient
# with integrated security inside a job started with the domain credentials,
# so no module beyond the .NET framework is needed. Nothing here writes a
# password to a log or to the console.

function Invoke-SqlAsDomainUser {
    param(
        [Parameter(Mandatory = $true)][hashtable]$Credentials,
        [Parameter(Mandatory = $true)][string]$Query,
        [string]$Server = '.'
    )
    $credential = New-DomainCredential -DomainName $Credentials.DomainName `
        -UserName $Credentials.UserName -Password $Credentials.Password
    $job = Start-Job -Credential $credential -ArgumentList @($Server, $Query) -ScriptBlock {
        param($Server, $Query)
        $connection = New-Object System.Data.SqlClient.SqlConnection(
            "Server=$Server;Database=master;Integrated Security=True;Connect Timeout=60")
        $connection.Open()
        try {
            $command = $connection.CreateCommand()
            $command.CommandText = $Query
            $command.CommandTimeout = 1800
            $result = $command.ExecuteScalar()
            if ($null -ne $result -and $result -isnot [System.DBNull]) { $result }
        } finally {
            $connection.Close()
        }
    }
    try {
        Wait-Job -Job $job | Out-Null
        if ($job.State -ne 'Completed') {
            throw "SQL command failed: $($job.ChildJobs[0].JobStateInfo.Reason.Message)"
        }
        return Receive-Job -Job $job -ErrorAction Stop
    } finally {
        Remove-Job -Job $job -Force
    }
}

function ConvertTo-SqlName {
    param([Parameter(Mandatory = $true)][string]$Name)
    return '[' + $Name.Replace(']', ']]') + ']'
}

function ConvertTo-SqlLiteral {
    param([Parameter(Mandatory = $true)][string]$Text)
    return "N'" + $Text.Replace("'", "''") + "'"
}

function Open-FirewallPort {
    param([Parameter(Mandatory = $true)][string]$Name, [Parameter(Mandatory = $true)][int]$Port)
    if (-not (Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue)) {
        New-NetFirewallRule -Name $Name -DisplayName $Name -Direction Inbound -Protocol TCP `
            -LocalPort $Port -Action Allow | Out-Null
    }
}

function Install-SqlServerForAlwaysOn {
    param(
        [string]$SetupRoot = '',
        [Parameter(Mandatory = $true)][hashtable]$Credentials,
        [bool]$MixedModeAuth = $false,
        [string]$SAPassword = '',
        [int]$ListenerPort = 1433
    )
    if (Get-Service -Name MSSQLSERVER -ErrorAction SilentlyContinue) {
        Write-MuranoLog 'SQL Server is already installed'
        return 'AlreadyInstalled'
    }
    Install-FeatureIfMissing -Name @('NET-Framework-Core') | Out-Null
    if (-not $SetupRoot) {
        $SetupRoot = Join-Path ([Environment]::GetEnvironmentVariable('MuranoFileShare', 'Machine')) `
            'Prerequisites\SQL Server'
    }
    $setup = Join-Path $SetupRoot 'setup.exe'
    if (-not (Test-Path -LiteralPath $setup)) { throw "SQL Server setup not found at $setup" }
    $account = '{0}\{1}' -f (($Credentials.DomainName -split '\.')[0]), $Credentials.UserName
    $arguments = @('/Q', '/ACTION=Install', '/IACCEPTSQLSERVERLICENSETERMS',
        '/FEATURES=SQLEngine,Replication,FullText,Conn', '/INSTANCENAME=MSSQLSERVER',
        "/SQLSVCACCOUNT=$account", "/SQLSVCPASSWORD=$($Credentials.Password)",
        "/AGTSVCACCOUNT=$account", "/AGTSVCPASSWORD=$($Credentials.Password)",
        '/AGTSVCSTARTUPTYPE=Automatic', "/SQLSYSADMINACCOUNTS=$account", '/TCPENABLED=1')
    if ($MixedModeAuth) {
        if ($SAPassword.Length -lt 8) { throw 'Mixed mode authentication needs an sa password' }
        $arguments += @('/SECURITYMODE=SQL', "/SAPWD=$SAPassword")
    }
    Write-MuranoLog "Running SQL Server setup from $SetupRoot"
    $process = Start-Process -FilePath $setup -ArgumentList $arguments -Wait -PassThru -NoNewWindow `
        -RedirectStandardOutput (Join-Path $env:TEMP 'sql-setup.out')
    if ($process.ExitCode -ne 0 -and $process.ExitCode -ne 3010) {
        throw "SQL Server setup exited with code $($process.ExitCode); see the setup logs under Program Files\Microsoft SQL Server"
    }
    Open-FirewallPort -Name 'Murano-SQL' -Port 1433
    Open-FirewallPort -Name 'Murano-SQL-Listener' -Port $ListenerPort
    Write-MuranoLog "SQL Server installed (setup exit code $($process.ExitCode))"
    return 'Installed'
}

function Enable-AlwaysOnService {
    $service = Get-CimInstance -Namespace 'root\Microsoft\SqlServer' -ClassName __NAMESPACE |
        Where-Object { $_.Name -like 'ComputerManagement*' } | Select-Object -Last 1
    if ($null -eq $service) { throw 'SQL Server WMI provider not found' }
    $namespace = "root\Microsoft\SqlServer\$($service.Name)"
    $setting = Get-CimInstance -Namespace $namespace -ClassName ServerSettingsGeneralFlag |
        Where-Object { $_.FlagName -eq 'IsHADREnabled' -and $_.InstanceName -eq 'MSSQLSERVER' }
    if ($setting -and -not $setting.FlagValue) {
        Invoke-CimMethod -InputObject $setting -MethodName SetValue -Arguments @{FlagValue = $true} | Out-Null
        Restart-Service -Name MSSQLSERVER -Force
        Write-MuranoLog 'AlwaysOn enabled; SQL Server restarted'
    }
}

function New-MirroringEndpoint {
    param([Parameter(Mandatory = $true)][hashtable]$Credentials, [int]$EndpointPort = 5022)
    $existing = Invoke-SqlAsDomainUser -Credentials $Credentials -Query `
        "SELECT TOP 1 tcp.port FROM sys.tcp_endpoints tcp JOIN sys.database_mirroring_endpoints m ON m.endpoint_id = tcp.endpoint_id"
    if ($existing) { return [int]$existing }
    $port = $EndpointPort
    while (Get-NetTCPConnection -LocalPort $port -State Listen -ErrorAction SilentlyContinue) { $port++ }
    $account = ConvertTo-SqlName ('{0}\{1}' -f (($Credentials.DomainName -split '\.')[0]), $Credentials.UserName)
    Invoke-SqlAsDomainUser -Credentials $Credentials -Query @"
CREATE ENDPOINT [AlwaysOnEndpoint] STATE = STARTED
    AS TCP (LISTENER_PORT = $port)
    FOR DATABASE_MIRRORING (ROLE = ALL, ENCRYPTION = REQUIRED ALGORITHM AES);
IF NOT EXISTS (SELECT 1 FROM sys.server_principals WHERE name = N'$($account.Trim('[', ']'))')
    CREATE LOGIN $account FROM WINDOWS;
GRANT CONNECT ON ENDPOINT::[AlwaysOnEndpoint] TO $account;
"@ | Out-Null
    Open-FirewallPort -Name "Murano-SQL-Endpoint-$port" -Port $port
    return $port
}

function Initialize-AlwaysOn {
    param([int]$EndpointPort = 5022, [Parameter(Mandatory = $true)][hashtable]$Credentials)
    Enable-AlwaysOnService
    $port = New-MirroringEndpoint -Credentials $Credentials -EndpointPort $EndpointPort
    Write-MuranoLog "AlwaysOn endpoint listens on port $port"
    return $port
}

function New-AvailabilityGroupWithPrimary {
    param(
        [Parameter(Mandatory = $true)][string]$GroupName,
        [Parameter(Mandatory = $true)][string]$ListenerName,
        [Parameter(Mandatory = $true)][string]$ListenerAddress,
        [int]$ListenerPort = 1433,
        [string[]]$Databases = @(),
        [int]$EndpointPort = 5022,
        [Parameter(Mandatory = $true)][string]$DomainName,
        [object[]]$Replicas = @(),
        [Parameter(Mandatory = $true)][hashtable]$Credentials
    )
    Enable-AlwaysOnService
    $port = New-MirroringEndpoint -Credentials $Credentials -EndpointPort $EndpointPort
    $group = ConvertTo-SqlName $GroupName
    $exists = Invoke-SqlAsDomainUser -Credentials $Credentials -Query `
        "SELECT COUNT(*) FROM sys.availability_groups WHERE name = $(ConvertTo-SqlLiteral $GroupName)"
    if ([int]$exists -gt 0) {
        Write-MuranoLog "Availability group $GroupName exists already"
        return $port
    }
    foreach ($database in $Databases) {
        $name = ConvertTo-SqlName $database
        Invoke-SqlAsDomainUser -Credentials $Credentials -Query @"
IF DB_ID($(ConvertTo-SqlLiteral $database)) IS NULL CREATE DATABASE $name;
ALTER DATABASE $name SET RECOVERY FULL;
BACKUP DATABASE $name TO DISK = N'NUL';
"@ | Out-Null
    }
    $self = "TCP://$($env:COMPUTERNAME).$($DomainName):$port"
    $definitions = @("N'$($env:COMPUTERNAME)' WITH (ENDPOINT_URL = N'$self', AVAILABILITY_MODE = SYNCHRONOUS_COMMIT, FAILOVER_MODE = AUTOMATIC, SEEDING_MODE = AUTOMATIC)")
    foreach ($replica in $Replicas) {
        $sync = [bool]$replica.Synchronous
        $mode = if ($sync) { 'SYNCHRONOUS_COMMIT' } else { 'ASYNCHRONOUS_COMMIT' }
        $failover = if ($sync) { 'AUTOMATIC' } else { 'MANUAL' }
        $definitions += "N'$($replica.Name)' WITH (ENDPOINT_URL = N'$($replica.EndpointUrl)', AVAILABILITY_MODE = $mode, FAILOVER_MODE = $failover, SEEDING_MODE = AUTOMATIC)"
    }
    $databaseList = ($Databases | ForEach-Object { ConvertTo-SqlName $_ }) -join ', '
    $forDatabases = if ($databaseList) { "FOR DATABASE $databaseList" } else { '' }
    Invoke-SqlAsDomainUser -Credentials $Credentials -Query @"
CREATE AVAILABILITY GROUP $group WITH (AUTOMATED_BACKUP_PREFERENCE = SECONDARY)
    $forDatabases
    REPLICA ON $($definitions -join ",`n    ");
ALTER AVAILABILITY GROUP $group ADD LISTENER $(ConvertTo-SqlLiteral $ListenerName)
    (WITH IP (($(ConvertTo-SqlLiteral $ListenerAddress), N'255.255.255.0')), PORT = $ListenerPort);
"@ | Out-Null
    Write-MuranoLog "Availability group $GroupName created with $($Replicas.Count) secondary replica(s)"
    return $port
}

function Join-AvailabilityGroupReplica {
    param(
        [Parameter(Mandatory = $true)][string]$GroupName,
        [Parameter(Mandatory = $true)][string]$MasterNode,
        [bool]$Synchronous = $true,
        [string[]]$Databases = @(),
        [Parameter(Mandatory = $true)][hashtable]$Credentials
    )
    $group = ConvertTo-SqlName $GroupName
    $joined = Invoke-SqlAsDomainUser -Credentials $Credentials -Query `
        "SELECT COUNT(*) FROM sys.availability_groups WHERE name = $(ConvertTo-SqlLiteral $GroupName)"
    if ([int]$joined -eq 0) {
        Invoke-SqlAsDomainUser -Credentials $Credentials -Query @"
ALTER AVAILABILITY GROUP $group JOIN;
ALTER AVAILABILITY GROUP $group GRANT CREATE ANY DATABASE;
"@ | Out-Null
    }
    $mode = if ($Synchronous) { 'synchronous' } else { 'asynchronous' }
    Write-MuranoLog "Joined availability group $GroupName of $MasterNode as a $mode replica"
    return $mode
}
